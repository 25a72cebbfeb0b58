//! Writes the window's size and position to disk soon after they change.
//!
//! The window-state plugin writes its file only when the app exits cleanly
//! (`RunEvent::Exit`): an app that is killed instead (SIGKILL, a crash, the
//! E2E driver closing its session) forgot where its window was. Saving
//! shortly after each move or resize, once the window has settled, keeps
//! the last rect whatever way the app ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tauri::{Manager as _, Runtime, Window, WindowEvent};
use tauri_plugin_window_state::{AppHandleExt as _, StateFlags};

/// How long the window must stay put before its rect is written: a drag
/// sends a move per frame.
const SETTLE: Duration = Duration::from_millis(400);

/// Counts moves and resizes; a save runs only if none came after it was scheduled.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// The app's window-event hook: schedules a save after a move or resize.
pub fn on_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if !matches!(event, WindowEvent::Moved(_) | WindowEvent::Resized(_)) {
        return;
    }
    let change = CHANGES.fetch_add(1, Ordering::SeqCst) + 1;
    let app = window.app_handle().clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SETTLE).await;
        if CHANGES.load(Ordering::SeqCst) != change {
            return;
        }
        // On the main thread, never here: the plugin holds its cache's lock
        // while it asks the window for its rect, which a worker thread asks
        // of the main thread and waits for; the main thread takes that lock
        // itself (a move, the save at exit), so a save from here that met
        // either waited forever and the app never exited.
        let saver = app.clone();
        let queued = app.run_on_main_thread(move || {
            if let Err(err) = saver.save_window_state(StateFlags::all()) {
                tracing::warn!(%err, "saving the window's size and position");
            }
        });
        if let Err(err) = queued {
            tracing::warn!(%err, "saving the window's size and position");
        }
    });
}
