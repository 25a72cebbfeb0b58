//! Commands for the window frame (title bar, About view).

use serde::Serialize;

use crate::cli_binary;

/// Who is running: shown in the header so a screenshot names the version, and
/// in the About view with the commit and the CLI that configs will name.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct AppInfo {
    pub name: &'static str,
    /// The version of `gatehouse-core`, which holds all the logic.
    pub version: &'static str,
    /// The git commit the app was built from (`unknown` without git).
    pub commit: &'static str,
    pub license: &'static str,
    /// The `gatehouse` CLI generated configs start…
    pub cli: Option<String>,
    /// …or why there is none.
    pub cli_error: Option<String>,
}

#[tauri::command(rename_all = "snake_case")]
pub fn app_info() -> AppInfo {
    let (cli, cli_error) = match cli_binary::locate() {
        Ok(path) => (Some(path.display().to_string()), None),
        Err(e) => (None, Some(format!("{}: {}", e.code, e.message))),
    };
    AppInfo {
        name: "Gatehouse",
        version: gatehouse_core::version(),
        commit: env!("GATEHOUSE_GIT_COMMIT"),
        license: env!("CARGO_PKG_LICENSE"),
        cli,
        cli_error,
    }
}

/// The screen shown last, to show again at start.
#[tauri::command(rename_all = "snake_case")]
pub fn last_screen(prefs: tauri::State<'_, crate::prefs::Prefs>) -> Option<String> {
    prefs.get().last_screen
}

/// Remembers `id` as the screen shown last.
#[tauri::command(rename_all = "snake_case")]
pub fn remember_screen(
    id: String,
    prefs: tauri::State<'_, crate::prefs::Prefs>,
) -> crate::error::IpcResult<()> {
    Ok(prefs.update(|r| r.set_last_screen(&id))?)
}
