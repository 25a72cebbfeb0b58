//! Commands for the site picker (the Overview screen).

use std::path::PathBuf;

use gatehouse_core::Error;
use gatehouse_core::error::codes;
use gatehouse_core::site::{self, Flags, Settings};
use serde::Serialize;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

/// What the page shows about the open site.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct SiteSummary {
    pub path: String,
    pub name: String,
    pub scratch: bool,
}

/// Opens the site in folder `path` and makes it the one every screen uses.
///
/// The database URL comes from the site's `gatehouse.toml` (or its embedded
/// SQLite file); the app takes no `GATEHOUSE_*` environment overrides, so what
/// the window shows is what the folder says.
#[tauri::command(rename_all = "snake_case")]
pub async fn open_site(path: String, state: State<'_, AppState>) -> IpcResult<SiteSummary> {
    let path = path.trim();
    if path.is_empty() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "no folder given",
            "enter the path of a site folder",
        )
        .into());
    }
    let settings = Settings {
        dir: PathBuf::from(path),
        database_url: None,
    };
    let site = site::open(&settings).await?;
    let summary = SiteSummary {
        path: site.dir.display().to_string(),
        name: site.file.name.clone(),
        scratch: site.is_scratch(),
    };
    state.set_site(site);
    Ok(summary)
}

/// The folder the site field starts with: `GATEHOUSE_SITE`, else the current
/// directory, resolved by the same function as the CLI's `--site`.
#[tauri::command(rename_all = "snake_case")]
pub fn default_site_path() -> IpcResult<String> {
    let settings = Settings::resolve(&Flags::default(), |name| std::env::var(name).ok())?;
    Ok(settings.dir.display().to_string())
}
