//! Commands for the Site config screen: the site's key/value config (the
//! `http_fetch` allowlist among it), listed with secret values redacted, set
//! and removed, each change audited by core. A secret value goes to Rust and
//! never comes back to the page.

use gatehouse_core::site::config::{self, ConfigEntry};
use tauri::State;

use crate::commands::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

#[tauri::command(rename_all = "snake_case")]
pub async fn list_site_config(state: State<'_, AppState>) -> IpcResult<Vec<ConfigEntry>> {
    let site = state.site()?;
    Ok(config::list(&site.store).await?)
}

#[tauri::command(rename_all = "snake_case")]
pub async fn set_site_config(
    key: String,
    value: String,
    secret: bool,
    state: State<'_, AppState>,
) -> IpcResult<ConfigEntry> {
    let site = state.site()?;
    Ok(config::set(&site.store, DESKTOP_ACTOR, &key, &value, secret).await?)
}

#[tauri::command(rename_all = "snake_case")]
pub async fn unset_site_config(key: String, state: State<'_, AppState>) -> IpcResult<()> {
    let site = state.site()?;
    Ok(config::unset(&site.store, DESKTOP_ACTOR, &key).await?)
}
