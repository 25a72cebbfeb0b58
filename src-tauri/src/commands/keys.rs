//! Commands for the Keys screen: list, mint, revoke, roll.
//!
//! A minted (or rolled) raw key goes to the page once, in the command's
//! answer, and is also remembered in memory by [`AppState`] so the Client
//! config panel can write it into a config without the page sending it back.

use gatehouse_core::access::keys::{self, KeyInfo, Minted};
use gatehouse_core::access::permissions::parse_roles;
use gatehouse_core::time::now_ms;
use serde::Serialize;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

/// Who the desktop app acts as in the audit log: the local administrator at
/// this window (the CLI's counterpart is `cli`).
pub const DESKTOP_ACTOR: &str = gatehouse_core::access::audit::AuditActor::DESKTOP;

/// How long a rolled key keeps working when the page names no grace period.
const DEFAULT_GRACE: &str = "24h";

/// A freshly minted key, shown once. No `Debug`: it holds the raw key.
#[derive(Serialize, ts_rs::TS)]
pub struct MintedKey {
    pub key: String,
    pub info: KeyInfo,
}

fn shown_once(state: &AppState, minted: Minted) -> MintedKey {
    state.remember_key(&minted.info.id, minted.key.clone());
    MintedKey {
        key: minted.key.expose().to_string(),
        info: minted.info,
    }
}

/// The arguments of the `list_keys` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ListKeysArgs {}

/// Every key of the open site, without secrets.
#[tauri::command(rename_all = "snake_case")]
pub async fn list_keys(args: ListKeysArgs, state: State<'_, AppState>) -> IpcResult<Vec<KeyInfo>> {
    let ListKeysArgs {} = args;
    let site = state.site()?;
    Ok(keys::list(&site.store).await?)
}

/// The arguments of the `mint_key` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct MintKeyArgs {
    pub label: String,
    pub roles: Vec<String>,
    pub expires: Option<String>,
}

/// Mints a key; `expires` is empty for none, a duration (`30d`) or an RFC 3339 time.
#[tauri::command(rename_all = "snake_case")]
pub async fn mint_key(args: MintKeyArgs, state: State<'_, AppState>) -> IpcResult<MintedKey> {
    let MintKeyArgs {
        label,
        roles,
        expires,
    } = args;
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    let expires_at = match expires.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(keys::parse_expiry(text, now_ms())?),
    };
    let minted = keys::mint(&site.store, DESKTOP_ACTOR, &label, &roles, expires_at).await?;
    Ok(shown_once(&state, minted))
}

/// The arguments of the `revoke_key` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RevokeKeyArgs {
    pub id: String,
}

/// Revokes key `id` now.
#[tauri::command(rename_all = "snake_case")]
pub async fn revoke_key(args: RevokeKeyArgs, state: State<'_, AppState>) -> IpcResult<KeyInfo> {
    let RevokeKeyArgs { id } = args;
    let site = state.site()?;
    let info = keys::revoke(&site.store, DESKTOP_ACTOR, &id).await?;
    state.forget_key(&id);
    Ok(info)
}

/// The arguments of the `roll_key` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RollKeyArgs {
    pub id: String,
    pub grace: Option<String>,
}

/// Mints a replacement for key `id`; the old one expires after `grace` (24h by default).
#[tauri::command(rename_all = "snake_case")]
pub async fn roll_key(args: RollKeyArgs, state: State<'_, AppState>) -> IpcResult<MintedKey> {
    let RollKeyArgs { id, grace } = args;
    let site = state.site()?;
    let grace = keys::parse_duration_ms(grace.as_deref().unwrap_or(DEFAULT_GRACE))?;
    let minted = keys::roll(&site.store, DESKTOP_ACTOR, &id, grace).await?;
    Ok(shown_once(&state, minted))
}

/// The arguments of the `key_overview` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct KeyOverviewArgs {
    pub filter: gatehouse_core::access::key_overview::KeyFilter,
}

/// The Keys screen's list: every key matching `filter` (`all`, `active`,
/// `expires_soon`, `expired`, `revoked`) with its uses and expiry warning.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_overview(
    args: KeyOverviewArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<gatehouse_core::access::key_overview::KeyOverview>> {
    let KeyOverviewArgs { filter } = args;
    let site = state.site()?;
    Ok(gatehouse_core::access::key_overview::list(&site.store, filter).await?)
}
