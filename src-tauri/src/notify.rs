//! Desktop notifications. Linux and Windows use Tauri's notification plugin; macOS
//! runs `osascript`'s `display notification`, because the plugin's macOS backend
//! (`mac-notification-sys`) compiles Objective-C against the Cocoa SDK, which the
//! Linux cross check cannot have (docs/decisions.md, "Desktop notifications").

/// Shows a notification. Best effort: the caller logs a failure, and the page's
/// badge and queue stay what the owner relies on.
#[cfg(not(target_os = "macos"))]
pub async fn show(app: &tauri::AppHandle, title: &str, body: &str) -> Result<(), String> {
    use tauri_plugin_notification::NotificationExt as _;
    // A freedesktop notification server that renders body markup (KDE,
    // dunst) would obey tags an AI client put in a held call's title.
    #[cfg(target_os = "linux")]
    let body = &gatehouse_core::text::escape_markup(body);
    app.notification()
        .builder()
        .title(title)
        .body(body)
        .show()
        .map_err(|e| e.to_string())
}

/// Shows a notification. Best effort: the caller logs a failure, and the page's
/// badge and queue stay what the owner relies on.
#[cfg(target_os = "macos")]
pub async fn show(_app: &tauri::AppHandle, title: &str, body: &str) -> Result<(), String> {
    use std::process::Stdio;
    // The texts are the script's arguments, never part of its source, so no
    // quoting in a tool or caller name can change what runs.
    let status = tokio::process::Command::new("/usr/bin/osascript")
        .args([
            "-e",
            "on run argv",
            "-e",
            "display notification (item 2 of argv) with title (item 1 of argv)",
            "-e",
            "end run",
            title,
            body,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("osascript exited with {status}"))
    }
}
