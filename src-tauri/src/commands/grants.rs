//! Commands for the Keys screen's OAuth grants: list them with their usage,
//! revoke one, and approve the pairing code a consent page shows (after
//! showing which application it lets in), choosing the key or user the
//! application will act as.

use gatehouse_core::access::oauth::Principal;
use gatehouse_core::access::oauth::flow::{self, PairingApproved, PairingRequest};
use gatehouse_core::access::oauth::grants::{self, GrantOverview};
use gatehouse_core::time::now_ms;
use tauri::State;

use super::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `oauth_grants` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct OAuthGrantsArgs {}

/// Every grant of the open site (revoked ones too, with why), oldest first,
/// with what it did over the last week.
#[tauri::command(rename_all = "snake_case")]
pub async fn oauth_grants(
    args: OAuthGrantsArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<GrantOverview>> {
    let OAuthGrantsArgs {} = args;
    let site = state.site()?;
    Ok(grants::list_with_usage(&site.store, now_ms()).await?)
}

/// The arguments of the `revoke_oauth_grant` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RevokeOAuthGrantArgs {
    pub id: String,
}

/// Revokes grant `id` and its tokens now, on every instance serving the site.
#[tauri::command(rename_all = "snake_case")]
pub async fn revoke_oauth_grant(
    args: RevokeOAuthGrantArgs,
    state: State<'_, AppState>,
) -> IpcResult<()> {
    let RevokeOAuthGrantArgs { id } = args;
    let site = state.site()?;
    Ok(grants::revoke(&site.store, DESKTOP_ACTOR, &id).await?)
}

/// The arguments of the `pairing_request` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PairingRequestArgs {
    /// The code the consent page shows (case and dashes do not matter).
    pub code: String,
    /// The key or user the application would act as.
    pub acts_as: Principal,
}

/// Which application a pairing code would let in, shown before the admin
/// approves it; changes nothing.
#[tauri::command(rename_all = "snake_case")]
pub async fn pairing_request(
    args: PairingRequestArgs,
    state: State<'_, AppState>,
) -> IpcResult<PairingRequest> {
    let PairingRequestArgs { code, acts_as } = args;
    let site = state.site()?;
    Ok(flow::pairing_request(&site.store, &code, &acts_as).await?)
}

/// The arguments of the `approve_pairing` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ApprovePairingArgs {
    /// The code the consent page shows (case and dashes do not matter).
    pub code: String,
    /// The key or user the application will act as.
    pub acts_as: Principal,
}

/// Approves a pending pairing code; the consent page's "Continue" then
/// finishes the flow.
#[tauri::command(rename_all = "snake_case")]
pub async fn approve_pairing(
    args: ApprovePairingArgs,
    state: State<'_, AppState>,
) -> IpcResult<PairingApproved> {
    let ApprovePairingArgs { code, acts_as } = args;
    let site = state.site()?;
    Ok(flow::approve_pairing(&site.store, DESKTOP_ACTOR, &code, &acts_as).await?)
}
