//! What the host process takes from its environment: its own secrets, taken
//! out of the environment block at start ([`take_host_secrets`]) and read
//! from memory after ([`host_var`]), and the user's config directory.

use std::path::PathBuf;

use crate::error::{Error, Result, codes};

/// Overrides the user's config directory (tests, portable installs).
pub const ENV_CONFIG_DIR: &str = "GATEHOUSE_CONFIG_DIR";
/// The host's own secrets in its environment: the API key an actor runs as,
/// a database URL (it may hold a password) and libpq's password variable.
pub const HOST_SECRETS: &[&str] = &["GATEHOUSE_API_KEY", "GATEHOUSE_DATABASE_URL", "PGPASSWORD"];

/// [`HOST_SECRETS`] as [`take_host_secrets`] found them.
static TAKEN: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();

/// Takes every [`HOST_SECRETS`] variable out of this process: its bytes in
/// the environment block are zeroed (that block is what `/proc/PID/environ`
/// shows, to root or a debugger, for the process's whole life; unsetting
/// alone leaves them there) and the variable is removed, so nothing started
/// later inherits it. [`host_var`] reads them from our memory afterwards.
///
/// # Safety
/// No other thread may read or write the environment meanwhile: call it
/// first thing in `main`, before any thread starts.
#[allow(unsafe_code)]
pub unsafe fn take_host_secrets() {
    TAKEN.get_or_init(|| {
        HOST_SECRETS
            .iter()
            .filter_map(|&name| {
                let value = std::env::var(name).ok()?;
                let key = std::ffi::CString::new(name).ok()?;
                #[cfg(unix)]
                // SAFETY: single-threaded by this function's contract; getenv
                // returns the value's bytes in place, NUL-terminated, and they
                // are writable (the environment block or a copy setenv made).
                unsafe {
                    let bytes = nix::libc::getenv(key.as_ptr());
                    if !bytes.is_null() {
                        std::ptr::write_bytes(bytes, 0, nix::libc::strlen(bytes));
                    }
                }
                // Windows: removed only (no /proc/PID/environ there; a process
                // allowed to read this one's memory could still find the bytes).
                #[cfg(not(unix))]
                let _ = key;
                // SAFETY: single-threaded by this function's contract.
                unsafe { std::env::remove_var(name) };
                Some((name, value))
            })
            .collect()
    });
}

/// A host variable: the value [`take_host_secrets`] took, else the
/// environment's (a process that took nothing, such as a test).
pub fn host_var(name: &str) -> Option<String> {
    match TAKEN.get() {
        Some(taken) if HOST_SECRETS.contains(&name) => taken
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone()),
        _ => std::env::var(name).ok(),
    }
}

/// The user's Gatehouse config directory: `$GATEHOUSE_CONFIG_DIR`, else the
/// platform's config directory (`~/.config/gatehouse` on Linux).
pub fn config_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(ENV_CONFIG_DIR).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    default_config_dir().ok_or_else(|| {
        Error::new(
            codes::CONFIG_HOME_UNKNOWN,
            "cannot find the user's config directory",
        )
        .hint(format!(
            "set {ENV_CONFIG_DIR} to a directory only you can read"
        ))
    })
}

/// The platform's Gatehouse config directory, whatever `GATEHOUSE_CONFIG_DIR`
/// says: `~/.config/gatehouse` on Linux, `~/Library/Application
/// Support/gatehouse` on macOS, `%APPDATA%\gatehouse` on Windows.
pub fn default_config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("gatehouse"))
}
