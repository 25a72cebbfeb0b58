//! What the app remembers between runs (core's [`Remembered`]), loaded once
//! from the app's config directory and saved after every change.

use std::path::PathBuf;
use std::sync::Mutex;

use gatehouse_core::Result;
use gatehouse_core::site::remembered::Remembered;
use gatehouse_core::sync::lock;

/// Managed by the app next to [`crate::state::AppState`].
#[derive(Debug)]
pub struct Prefs {
    /// `None` when the platform has no config directory: nothing is kept.
    dir: Option<PathBuf>,
    data: Mutex<Remembered>,
}

impl Prefs {
    pub fn load(dir: Option<PathBuf>) -> Self {
        let data = dir.as_deref().map(Remembered::load).unwrap_or_default();
        Self {
            dir,
            data: Mutex::new(data),
        }
    }

    pub fn get(&self) -> Remembered {
        lock(&self.data).clone()
    }

    /// Applies `change` and saves the result.
    pub fn update<T>(&self, change: impl FnOnce(&mut Remembered) -> Result<T>) -> Result<T> {
        let mut data = lock(&self.data);
        let out = change(&mut data)?;
        if let Some(dir) = &self.dir {
            data.save(dir)?;
        }
        Ok(out)
    }
}
