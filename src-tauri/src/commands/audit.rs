//! Commands for the Audit screen: filtered pages newest first, verifying the
//! chain (with the signed checkpoints), and exporting to a JSON file.

use gatehouse_core::access::audit::Report;
use gatehouse_core::access::audit_view::{self, AuditExport, AuditFilter, AuditPage};
use gatehouse_core::site::checkpoint;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `audit_page` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct AuditPageArgs {
    pub filter: AuditFilter,
    pub before_seq: Option<i64>,
    pub limit: i64,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn audit_page(args: AuditPageArgs, state: State<'_, AppState>) -> IpcResult<AuditPage> {
    let AuditPageArgs {
        filter,
        before_seq,
        limit,
    } = args;
    let site = state.site()?;
    Ok(audit_view::page(&site.store, &filter, before_seq, limit).await?)
}

/// The arguments of the `verify_audit` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct VerifyAuditArgs {}

/// Checks the whole chain; a broken chain is a result (`ok: false` with the
/// first bad entry), not an error.
#[tauri::command(rename_all = "snake_case")]
pub async fn verify_audit(args: VerifyAuditArgs, state: State<'_, AppState>) -> IpcResult<Report> {
    let VerifyAuditArgs {} = args;
    let site = state.site()?;
    Ok(checkpoint::verify(&site, None).await?)
}

/// The arguments of the `export_audit` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ExportAuditArgs {
    pub filter: AuditFilter,
    pub dir: String,
}

/// Writes the entries matching `filter` to a new JSON file in folder `dir`.
#[tauri::command(rename_all = "snake_case")]
pub async fn export_audit(
    args: ExportAuditArgs,
    state: State<'_, AppState>,
) -> IpcResult<AuditExport> {
    let ExportAuditArgs { filter, dir } = args;
    let site = state.site()?;
    let dir = audit_view::check_export_dir(&dir)?;
    Ok(audit_view::export_to(&site.store, &filter, &dir).await?)
}
