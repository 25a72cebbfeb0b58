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

/// The arguments of the `app_info` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct AppInfoArgs {}

#[tauri::command(rename_all = "snake_case")]
pub fn app_info(args: AppInfoArgs) -> AppInfo {
    let AppInfoArgs {} = args;
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

/// The arguments of the `last_screen` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct LastScreenArgs {}

/// The screen shown last, to show again at start.
#[tauri::command(rename_all = "snake_case")]
pub fn last_screen(
    args: LastScreenArgs,
    prefs: tauri::State<'_, crate::prefs::Prefs>,
) -> Option<String> {
    let LastScreenArgs {} = args;
    prefs.get().last_screen
}

/// The arguments of the `remember_screen` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RememberScreenArgs {
    pub id: String,
}

/// Remembers `id` as the screen shown last.
#[tauri::command(rename_all = "snake_case")]
pub fn remember_screen(
    args: RememberScreenArgs,
    prefs: tauri::State<'_, crate::prefs::Prefs>,
) -> crate::error::IpcResult<()> {
    let RememberScreenArgs { id } = args;
    Ok(prefs.update(|r| r.set_last_screen(&id))?)
}
