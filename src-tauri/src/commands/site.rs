//! Commands for the site picker (the Overview screen).

use std::path::PathBuf;
use std::sync::PoisonError;

use gatehouse_core::Error;
use gatehouse_core::error::codes;
use serde::Serialize;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

/// The site the user just opened.
#[derive(Debug, Serialize)]
pub struct SiteSummary {
    pub path: String,
}

/// Checks that `path` is a site folder and remembers it.
///
/// # Caveats
/// Until core's site module lands this only checks that `gatehouse.toml`
/// exists; it then becomes a call to core's site opener.
#[tauri::command]
pub async fn check_site(path: String, state: State<'_, AppState>) -> IpcResult<SiteSummary> {
    let path = path.trim();
    if path.is_empty() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "no folder given",
            "enter the path of a site folder",
        )
        .into());
    }
    let dir = PathBuf::from(path);
    if !dir.join("gatehouse.toml").is_file() {
        return Err(Error::invalid(
            codes::SITE_NOT_FOUND,
            format!(
                "{} is not a Gatehouse site (no gatehouse.toml)",
                dir.display()
            ),
            "pick a folder created by `gatehouse site init DIR`",
        )
        .into());
    }
    *state.site.lock().unwrap_or_else(PoisonError::into_inner) = Some(dir.clone());
    Ok(SiteSummary {
        path: dir.display().to_string(),
    })
}
