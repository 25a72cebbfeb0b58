//! Commands for the Site config screen: the site's key/value config (the
//! `http_fetch` allowlist among it), listed with secret values redacted, set
//! and removed, each change audited by core. A secret value goes to Rust and
//! never comes back to the page.

use gatehouse_core::site::config::{self, ConfigEntry};
use tauri::State;

use crate::commands::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `list_site_config` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ListSiteConfigArgs {}

#[tauri::command(rename_all = "snake_case")]
pub async fn list_site_config(
    args: ListSiteConfigArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<ConfigEntry>> {
    let ListSiteConfigArgs {} = args;
    let site = state.site()?;
    Ok(config::list(&site.store).await?)
}

/// The arguments of the `set_site_config` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SetSiteConfigArgs {
    pub key: String,
    pub value: String,
    pub secret: bool,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn set_site_config(
    args: SetSiteConfigArgs,
    state: State<'_, AppState>,
) -> IpcResult<ConfigEntry> {
    let SetSiteConfigArgs { key, value, secret } = args;
    let site = state.site()?;
    // Unticked keeps an entry's mark: a secret is unmarked only by removing it.
    Ok(config::set(
        &site.store,
        DESKTOP_ACTOR,
        &key,
        &value,
        secret.then_some(true),
    )
    .await?)
}

/// The arguments of the `unset_site_config` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct UnsetSiteConfigArgs {
    pub key: String,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn unset_site_config(
    args: UnsetSiteConfigArgs,
    state: State<'_, AppState>,
) -> IpcResult<()> {
    let UnsetSiteConfigArgs { key } = args;
    let site = state.site()?;
    Ok(config::unset(&site.store, DESKTOP_ACTOR, &key).await?)
}
