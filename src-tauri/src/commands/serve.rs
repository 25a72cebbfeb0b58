//! Commands for the Serve panel: core's supervised `gatehouse serve` for the
//! open site (start, status, stop), and every client's remote config for the
//! URL it serves.

use gatehouse_core::client_config::merge::mask_keys;
use gatehouse_core::supervise::remote::{self, RemoteConfig, RemoteKey};
use gatehouse_core::supervise::{ServeSpec, ServeStatus};
use tauri::State;

use crate::cli_binary;
use crate::error::IpcResult;
use crate::state::AppState;

/// Starts `gatehouse serve` for the open site on `listen` (loopback), with
/// `hosts` and `origins` added to the loopback allowlist; answers once it
/// serves.
#[tauri::command(rename_all = "snake_case")]
pub async fn start_serve(
    listen: String,
    hosts: Vec<String>,
    origins: Vec<String>,
    state: State<'_, AppState>,
) -> IpcResult<ServeStatus> {
    let site = state.site()?;
    let spec = ServeSpec::new(cli_binary::locate()?, site.dir, &listen, &hosts, &origins)?;
    Ok(state.serve.start(spec).await?)
}

/// The server's state and live counters; `null` when none was started.
#[tauri::command(rename_all = "snake_case")]
pub async fn serve_status(state: State<'_, AppState>) -> IpcResult<Option<ServeStatus>> {
    Ok(state.serve.status().await)
}

/// Stops the server and returns its last state.
#[tauri::command(rename_all = "snake_case")]
pub async fn stop_serve(state: State<'_, AppState>) -> IpcResult<ServeStatus> {
    Ok(state.serve.stop().await?)
}

/// Every client's remote config for `url`, calling as key `key_id` (written
/// in only while this window still holds the raw key from its mint, and then
/// masked for the page; otherwise referenced), or as `public`.
#[tauri::command(rename_all = "snake_case")]
pub fn serve_client_configs(
    url: String,
    key_id: Option<String>,
    state: State<'_, AppState>,
) -> Vec<RemoteConfig> {
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
