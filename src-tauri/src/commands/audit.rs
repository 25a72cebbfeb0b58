//! Commands for the Audit screen: filtered pages newest first, verifying the
//! chain (with the signed checkpoints), and exporting to a JSON file.

use gatehouse_core::access::audit::Report;
use gatehouse_core::access::audit_view::{self, AuditExport, AuditFilter, AuditPage};
use gatehouse_core::site::checkpoint;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

#[tauri::command(rename_all = "snake_case")]
pub async fn audit_page(
    filter: AuditFilter,
    before_seq: Option<i64>,
    limit: i64,
    state: State<'_, AppState>,
) -> IpcResult<AuditPage> {
    let site = state.site()?;
    Ok(audit_view::page(&site.store, &filter, before_seq, limit).await?)
}

/// Checks the whole chain; a broken chain is a result (`ok: false` with the
/// first bad entry), not an error.
#[tauri::command(rename_all = "snake_case")]
pub async fn verify_audit(state: State<'_, AppState>) -> IpcResult<Report> {
    let site = state.site()?;
    Ok(checkpoint::verify(&site, None).await?)
}

/// Writes the entries matching `filter` to a new JSON file in folder `dir`.
#[tauri::command(rename_all = "snake_case")]
pub async fn export_audit(
    filter: AuditFilter,
    dir: String,
    state: State<'_, AppState>,
) -> IpcResult<AuditExport> {
    let site = state.site()?;
    let dir = audit_view::check_export_dir(&dir)?;
    Ok(audit_view::export_to(&site.store, &filter, &dir).await?)
}
