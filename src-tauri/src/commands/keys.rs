//! Commands for the Keys screen: list (with reach and usage), mint, restrict,
//! revoke, roll, and the tools a key's roles allow (the allowlist picker).
//!
//! A minted (or rolled) raw key goes to the page once, in the command's
//! answer, and is also remembered in memory by [`AppState`] so the Client
//! config panel can write it into a config without the page sending it back.

use gatehouse_core::access::keys::{self, KeyInfo, Minted};
use gatehouse_core::access::permissions::parse_roles;
use gatehouse_core::mcp::server::key_form::{self, RestrictionForm, ToolChoice};
use gatehouse_core::mcp::server::key_report::{self, KeyReport};
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

/// Every key of the open site, without secrets.
#[tauri::command(rename_all = "snake_case")]
pub async fn list_keys(state: State<'_, AppState>) -> IpcResult<Vec<KeyInfo>> {
    let site = state.site()?;
    Ok(keys::list(&site.store).await?)
}

/// Mints a key; `expires` is empty for none, a duration (`30d`) or an RFC
/// 3339 time; `restrictions` narrow its roles (none when absent).
#[tauri::command(rename_all = "snake_case")]
pub async fn mint_key(
    label: String,
    roles: Vec<String>,
    expires: Option<String>,
    restrictions: Option<RestrictionForm>,
    state: State<'_, AppState>,
) -> IpcResult<MintedKey> {
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    let expires_at = match expires.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(keys::parse_expiry(text, now_ms())?),
    };
    let form = restrictions.unwrap_or_default();
    let minted = key_form::mint(
        &site.store,
        DESKTOP_ACTOR,
        &label,
        &roles,
        expires_at,
        &form,
    )
    .await?;
    Ok(shown_once(&state, minted))
}

/// Revokes key `id` now.
#[tauri::command(rename_all = "snake_case")]
pub async fn revoke_key(id: String, state: State<'_, AppState>) -> IpcResult<KeyInfo> {
    let site = state.site()?;
    let info = keys::revoke(&site.store, DESKTOP_ACTOR, &id).await?;
    state.forget_key(&id);
    Ok(info)
}

/// Mints a replacement for key `id`; the old one expires after `grace` (24h by default).
#[tauri::command(rename_all = "snake_case")]
pub async fn roll_key(
    id: String,
    grace: Option<String>,
    state: State<'_, AppState>,
) -> IpcResult<MintedKey> {
    let site = state.site()?;
    let grace = keys::parse_duration_ms(grace.as_deref().unwrap_or(DEFAULT_GRACE))?;
    let minted = keys::roll(&site.store, DESKTOP_ACTOR, &id, grace).await?;
    Ok(shown_once(&state, minted))
}

/// The Keys screen's list: every key matching `filter` (`all`, `active`,
/// `expires_soon`, `expired`, `revoked`) with its uses, expiry warning,
/// reach in words, restrictions as the form shows them, and usage.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_overview(
    filter: gatehouse_core::access::key_overview::KeyFilter,
    state: State<'_, AppState>,
) -> IpcResult<Vec<KeyReport>> {
    let site = state.site()?;
    Ok(key_report::list(&site.store, filter).await?)
}

/// Makes key `id`'s restrictions what the form says (the approval list is kept).
#[tauri::command(rename_all = "snake_case")]
pub async fn restrict_key(
    id: String,
    restrictions: RestrictionForm,
    state: State<'_, AppState>,
) -> IpcResult<KeyInfo> {
    let site = state.site()?;
    Ok(key_form::restrict(&site.store, DESKTOP_ACTOR, &id, &restrictions).await?)
}

/// The tools a key with `roles` may call before any restriction.
#[tauri::command(rename_all = "snake_case")]
pub async fn key_tools(roles: Vec<String>) -> IpcResult<Vec<ToolChoice>> {
    Ok(key_form::tool_choices(&parse_roles(&roles.join(","))?))
}
