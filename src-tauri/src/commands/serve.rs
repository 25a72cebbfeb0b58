//! Commands for the Serve panel: core's supervised `gatehouse serve` for the
//! open site (start, status, stop), and every client's remote config for the
//! URL it serves.

use gatehouse_core::client_config::merge::mask_keys;
use gatehouse_core::supervise::remote::{self, RemoteConfig, RemoteKey};
use gatehouse_core::supervise::{ServeSettings, ServeSpec, ServeStatus};
use tauri::State;

use crate::cli_binary;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `start_serve` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct StartServeArgs {
    /// Listen address, allowlists, public URL (OAuth), TLS files, proxies.
    pub settings: ServeSettings,
}

/// Starts `gatehouse serve` for the open site; answers once it serves.
#[tauri::command(rename_all = "snake_case")]
pub async fn start_serve(
    args: StartServeArgs,
    state: State<'_, AppState>,
) -> IpcResult<ServeStatus> {
    let StartServeArgs { settings } = args;
    let site = state.site()?;
    let spec = ServeSpec::new(cli_binary::locate()?, site.dir, &settings)?;
    Ok(state.serve.start(spec).await?)
}

/// The arguments of the `serve_status` command (none).
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ServeStatusArgs {}

/// The server's state and live counters; `null` when none was started.
#[tauri::command(rename_all = "snake_case")]
pub async fn serve_status(
    args: ServeStatusArgs,
    state: State<'_, AppState>,
) -> IpcResult<Option<ServeStatus>> {
    let ServeStatusArgs {} = args;
    Ok(state.serve.status().await)
}

/// The arguments of the `stop_serve` command (none).
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct StopServeArgs {}

/// Stops the server and returns its last state.
#[tauri::command(rename_all = "snake_case")]
pub async fn stop_serve(args: StopServeArgs, state: State<'_, AppState>) -> IpcResult<ServeStatus> {
    let StopServeArgs {} = args;
    Ok(state.serve.stop().await?)
}

/// The arguments of the `serve_client_configs` command.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ServeClientConfigsArgs {
    /// The served endpoint.
    pub url: String,
    /// The key clients call as; `null` for `public`.
    pub key_id: Option<String>,
}

/// Every client's remote config for `url`, calling as key `key_id`: written
/// in only while this window still holds the raw key from its mint (and then
/// masked for the page, as the Client config panel does); otherwise
/// referenced, as `gatehouse config --secret-ref` does.
#[tauri::command(rename_all = "snake_case")]
pub fn serve_client_configs(
    args: ServeClientConfigsArgs,
    state: State<'_, AppState>,
) -> Vec<RemoteConfig> {
    let ServeClientConfigsArgs { url, key_id } = args;
    let key = match key_id {
        None => RemoteKey::Public,
        Some(id) => state
            .minted_key(&id)
            .map_or(RemoteKey::Reference, RemoteKey::Raw),
    };
    let mut all = remote::remote_configs(&url, &key);
    for config in all.iter_mut().filter_map(|r| r.config.as_mut()) {
        for snippet in &mut config.snippets {
            snippet.text = mask_keys(&snippet.text);
        }
    }
    all
}
