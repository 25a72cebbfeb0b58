//! Commands for the Approvals screen: the site owner's queue of held calls.
//! The same core functions as `gatehouse approvals list|approve|deny`; the
//! decider recorded in the audit is the desktop's admin actor.

use gatehouse_core::access::approvals::{self, Decision, HeldCall, HeldNotice};
use tauri::State;

use crate::commands::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `held_calls` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct HeldCallsArgs {
    pub all: bool,
}

/// Held calls, newest first: the waiting ones, or every one when `all`.
/// Holds whose server is gone are first recorded as not run (as the CLI does).
#[tauri::command(rename_all = "snake_case")]
pub async fn held_calls(
    args: HeldCallsArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<HeldCall>> {
    let HeldCallsArgs { all } = args;
    let site = state.site()?;
    approvals::sweep(&site.store).await?;
    Ok(approvals::list(&site.store, all).await?)
}

/// The arguments of the `decide_held_call` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DecideHeldCallArgs {
    pub id: String,
    pub approve: bool,
}

/// The site owner approves (`approve`) or denies held call `id`.
#[tauri::command(rename_all = "snake_case")]
pub async fn decide_held_call(
    args: DecideHeldCallArgs,
    state: State<'_, AppState>,
) -> IpcResult<HeldCall> {
    let DecideHeldCallArgs { id, approve } = args;
    let site = state.site()?;
    let decision = if approve {
        Decision::Approve
    } else {
        Decision::Deny
    };
    let by = approvals::decider_label(DESKTOP_ACTOR, None)?;
    Ok(approvals::decide(&site.store, &id, decision, &by).await?)
}

/// The arguments of the `notify_held_calls` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct NotifyHeldCallsArgs {
    /// Held calls the page has not told the owner about yet.
    pub ids: Vec<String>,
}

/// Raises one desktop notification for those of `ids` that still wait for
/// the owner, worded by core from the stored holds (not from the page);
/// answers what it said, or `None` when none of them waits. The notification
/// is best effort (a system without a notification service shows none): the
/// navigation badge and the queue are what the owner can rely on.
#[tauri::command(rename_all = "snake_case")]
pub async fn notify_held_calls(
    args: NotifyHeldCallsArgs,
    app: tauri::AppHandle,
    state: State<'_, AppState>,
) -> IpcResult<Option<HeldNotice>> {
    let NotifyHeldCallsArgs { ids } = args;
    let site = state.site()?;
    let calls: Vec<HeldCall> = approvals::list(&site.store, false)
        .await?
        .into_iter()
        .filter(|c| ids.contains(&c.id))
        .collect();
    let Some(notice) = approvals::notice(&calls) else {
        return Ok(None);
    };
    if let Err(e) = crate::notify::show(&app, &notice.title, &notice.body).await {
        tracing::warn!(error = %e, "the held-call notification could not be raised");
    }
    Ok(Some(notice))
}
