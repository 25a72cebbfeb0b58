//! What the app remembers between commands.

use std::path::PathBuf;
use std::sync::Mutex;

/// Shared by every command through `tauri::State`.
///
/// A `std` mutex is enough: commands hold it only to read or swap a value,
/// never across an `.await`.
#[derive(Debug, Default)]
pub struct AppState {
    /// The site folder the user last opened successfully, if any.
    pub site: Mutex<Option<PathBuf>>,
}
