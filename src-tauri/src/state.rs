//! What the app remembers between commands.

use std::sync::Mutex;

use gatehouse_core::site::Site;

/// Shared by every command through `tauri::State`.
///
/// A `std` mutex is enough: commands hold it only to read or swap a value
/// (a `Site` is cheap to clone: its store is a pool handle), never across an
/// `.await`.
#[derive(Debug, Default)]
pub struct AppState {
    /// The site the user opened last, if any.
    pub site: Mutex<Option<Site>>,
}
