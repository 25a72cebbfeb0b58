//! Commands for the Client config panel: the same generator as
//! `gatehouse config`, pointed at the open site and the `gatehouse` CLI; the
//! same install (a dry run first, so the page shows the diff before writing)
//! and the same doctor as `gatehouse config install` and `gatehouse config doctor`.

use std::path::PathBuf;

use gatehouse_core::Error;
use gatehouse_core::client_config::merge::mask_keys;
use gatehouse_core::client_config::{
    self, Client, ConfigActor, ConfigRequest, DoctorReport, GeneratedConfig, Home, InstallOutcome,
    InstallRequest, KeyDelivery,
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
    /// Whether the install can write the client's file (some keep MCP servers
    /// in their own settings).
    pub installable: bool,
}

/// The arguments of the `config_clients` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ConfigClientsArgs {}

/// Every client core can write configuration for, in core's order.
#[tauri::command(rename_all = "snake_case")]
pub fn config_clients(args: ConfigClientsArgs) -> Vec<ClientChoice> {
    let ConfigClientsArgs {} = args;
    Client::ALL
        .map(|c| ClientChoice {
            id: c.id(),
            name: c.display_name(),
            secret_ref: c.supports_secret_ref(),
            installable: c.installable(),
        })
        .into()
}

/// The arguments of the `generate_client_config` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct GenerateClientConfigArgs {
    pub client: String,
    pub key_id: Option<String>,
    pub secret_ref: bool,
}

/// Generates `client`'s configuration for the open site, running as key
/// `key_id` (written inline, or referenced with `secret_ref`), or as the
/// public actor when no key is given. An inline key comes back masked.
#[tauri::command(rename_all = "snake_case")]
pub async fn generate_client_config(
    args: GenerateClientConfigArgs,
    state: State<'_, AppState>,
) -> IpcResult<GeneratedConfig> {
    let GenerateClientConfigArgs {
        client,
        key_id,
        secret_ref,
    } = args;
    let site = state.site()?;
    let actor = actor(&state, key_id.as_deref(), secret_ref)?;
    let request = ConfigRequest {
        client: client.parse()?,
        binary: cli_binary::locate()?,
        site_dir: client_config::check_site(&site.dir, &actor)?,
        server_name: None,
        actor,
        url: None,
    };
    Ok(masked(client_config::generate(&request)?))
}

/// `config` with any raw key replaced by [`client_config::REDACTED_KEY`] (core's
/// [`mask_keys`], as in the install's diff). The page got the key once, from
/// `mint_key` or `roll_key`; the panel shown then puts it back into the text
/// itself, and any later view shows the marker (the install still writes the
/// key, from Rust memory).
fn masked(mut config: GeneratedConfig) -> GeneratedConfig {
    for snippet in &mut config.snippets {
        snippet.text = mask_keys(&snippet.text);
    }
    config
}

/// The arguments of the `install_client_config` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct InstallClientConfigArgs {
    pub client: String,
    pub key_id: Option<String>,
    pub secret_ref: bool,
    pub scope: Option<String>,
    pub project: Option<String>,
    pub dry_run: bool,
    pub expected_hash: Option<String>,
}

/// Puts `client`'s entry into the client's own file for this user (or the
/// `project` folder's file with `scope` "project" or "local"). With `dry_run`
/// nothing is written and the outcome carries the diff the page shows before
/// writing, and the file's hash; the write passes it back as `expected_hash`
/// so a file changed since the preview is refused, not overwritten.
#[tauri::command(rename_all = "snake_case")]
pub async fn install_client_config(
    args: InstallClientConfigArgs,
    state: State<'_, AppState>,
) -> IpcResult<InstallOutcome> {
    let InstallClientConfigArgs {
        client,
        key_id,
        secret_ref,
        scope,
        project,
        dry_run,
        expected_hash,
    } = args;
    let site = state.site()?;
    let actor = actor(&state, key_id.as_deref(), secret_ref)?;
    let request = InstallRequest {
        config: ConfigRequest {
            client: client.parse()?,
            binary: cli_binary::locate()?,
            site_dir: client_config::check_site(&site.dir, &actor)?,
            server_name: None,
            actor,
            url: None,
        },
        scope: scope.as_deref().map(str::parse).transpose()?,
        home: Home::from_env()?,
        project: project
            .filter(|p| !p.trim().is_empty())
            .map(|p| client_config::client_path(&PathBuf::from(p)))
            .transpose()?,
        dry_run,
        expected_hash,
    };
    Ok(
        tauri::async_runtime::spawn_blocking(move || client_config::install(&request))
            .await
            .map_err(|e| {
                Error::new(
                    gatehouse_core::error::codes::IO_ERROR,
                    format!("install task failed: {e}"),
                )
            })??,
    )
}

/// The arguments of the `doctor_client_configs` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DoctorClientConfigsArgs {
    pub project: Option<String>,
}

/// Every MCP client file of this user (and of `project`, when given) and the
/// checks of each Gatehouse entry in them.
#[tauri::command(rename_all = "snake_case")]
pub async fn doctor_client_configs(args: DoctorClientConfigsArgs) -> IpcResult<DoctorReport> {
    let DoctorClientConfigsArgs { project } = args;
    let project = project.filter(|p| !p.trim().is_empty()).map(PathBuf::from);
    Ok(client_config::doctor(&Home::from_env()?, project.as_deref()).await)
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

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_core::client_config::REDACTED_KEY;

    /// What the page gets never holds the key; the fresh-mint panel's
    /// substitution of the marker gives back exactly what core wrote.
    #[test]
    fn a_generated_config_reaches_the_page_with_its_key_masked() {
        let key = gatehouse_core::access::keys::generate().1;
        for client in Client::ALL {
            let request = ConfigRequest {
                client,
                binary: PathBuf::from("/usr/bin/gatehouse"),
                site_dir: PathBuf::from("/srv/site"),
                server_name: None,
                actor: ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
                url: None,
            };
            let config = client_config::generate(&request).unwrap();
            let shown = masked(config.clone());
            for (full, shown) in config.snippets.iter().zip(&shown.snippets) {
                assert!(!shown.text.contains(key.expose()), "{client:?}");
                assert_eq!(
                    shown.text.contains(REDACTED_KEY),
                    full.contains_secret,
                    "{client:?}"
                );
                assert_eq!(
                    shown.text.replace(REDACTED_KEY, key.expose()),
                    full.text,
                    "{client:?}"
                );
            }
        }
    }
}
