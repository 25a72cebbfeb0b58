//! Commands for the window frame (title bar, about box).

use serde::Serialize;

/// Who is running: shown in the header so a screenshot names the version.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct AppInfo {
    pub name: &'static str,
    /// The version of `gatehouse-core`, which holds all the logic.
    pub version: &'static str,
}

#[tauri::command(rename_all = "snake_case")]
pub fn app_info() -> AppInfo {
    AppInfo {
        name: "Gatehouse",
        version: gatehouse_core::version(),
    }
}
