//! Commands for the Client config panel: the same generator as
//! `gatehouse config`, pointed at the open site and the `gatehouse` CLI.

use gatehouse_core::Error;
use gatehouse_core::client_config::{
    self, Client, ConfigActor, ConfigRequest, GeneratedConfig, KeyDelivery,
};
use gatehouse_core::error::codes;
use serde::Serialize;
use tauri::State;

use crate::cli_binary;
use crate::error::IpcResult;
use crate::state::AppState;

/// One entry of the client picker.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct ClientChoice {
    #[ts(as = "Client")]
    pub id: &'static str,
    pub name: &'static str,
    /// Whether the client can reference the key instead of holding it.
    pub secret_ref: bool,
}

/// Every client core can write configuration for, in core's order.
#[tauri::command(rename_all = "snake_case")]
pub fn config_clients() -> Vec<ClientChoice> {
    Client::ALL
        .map(|c| ClientChoice {
            id: c.id(),
            name: c.display_name(),
            secret_ref: c.supports_secret_ref(),
        })
        .into()
}

/// Generates `client`'s configuration for the open site, running as key
/// `key_id` (written inline, or referenced with `secret_ref`), or as the
/// public actor when no key is given.
#[tauri::command(rename_all = "snake_case")]
pub async fn generate_client_config(
    client: String,
    key_id: Option<String>,
    secret_ref: bool,
    state: State<'_, AppState>,
) -> IpcResult<GeneratedConfig> {
    let site = state.site()?;
    let actor = actor(&state, key_id.as_deref(), secret_ref)?;
    let request = ConfigRequest {
        client: client.parse()?,
        binary: cli_binary::locate()?,
        site_dir: client_config::check_site(&site.dir, &actor)?,
        server_name: None,
        actor,
    };
    Ok(client_config::generate(&request)?)
}

/// The raw key is only at hand for keys minted in this window (the store
/// keeps a hash); any other key can still be referenced.
fn actor(state: &AppState, key_id: Option<&str>, secret_ref: bool) -> Result<ConfigActor, Error> {
    if secret_ref {
        return Ok(ConfigActor::ApiKey(KeyDelivery::Reference));
    }
    let Some(id) = key_id else {
        return Ok(ConfigActor::Public);
    };
    let key = state.minted_key(id).ok_or_else(|| {
        Error::invalid(
            codes::KEY_SECRET_UNAVAILABLE,
            format!("the raw key {id} is not available: a key is shown only when it is minted"),
            "turn on “secret reference” so the client supplies the key, or roll the key to get a new one here",
        )
    })?;
    Ok(ConfigActor::ApiKey(KeyDelivery::Inline(key)))
}
