//! Finds the `gatehouse` CLI that generated client configs start.
//!
//! A config must name the CLI (`gatehouse mcp`), not this desktop binary, by
//! absolute path. It ships next to `gatehouse-desktop` (in a bundle, and in
//! `target/{debug,release}` after `cargo build --workspace`); `GATEHOUSE_BIN`
//! overrides that for installs that keep the two apart.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use gatehouse_core::client_config;
use gatehouse_core::error::{Error, Result, codes};

/// Environment variable naming the `gatehouse` binary explicitly.
pub const ENV_BIN: &str = "GATEHOUSE_BIN";

/// The absolute path of the `gatehouse` CLI, or `CLI_BINARY_NOT_FOUND`.
pub fn locate() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(codes::IO, format!("cannot locate this program: {e}")))?;
    locate_from(std::env::var_os(ENV_BIN), &exe)
}

/// [`locate`] with its inputs given: `GATEHOUSE_BIN` if set, else the sibling
/// of `exe`.
fn locate_from(env_bin: Option<OsString>, exe: &Path) -> Result<PathBuf> {
    let (candidate, source) = match env_bin.filter(|v| !v.is_empty()) {
        Some(path) => (PathBuf::from(path), format!("{ENV_BIN} names")),
        None => (
            exe.with_file_name(format!("gatehouse{}", std::env::consts::EXE_SUFFIX)),
            "expected next to the desktop app at".to_string(),
        ),
    };
    if !candidate.is_file() {
        return Err(Error::invalid(
            codes::CLI_BINARY_NOT_FOUND,
            format!(
                "the gatehouse CLI was not found: {source} {}",
                candidate.display()
            ),
            format!(
                "build it with `cargo build --workspace` (it lands next to gatehouse-desktop), \
                 or set {ENV_BIN} to the absolute path of an installed gatehouse"
            ),
        ));
    }
    client_config::client_path(&candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        dir
    }

    #[test]
    fn finds_the_sibling_of_the_desktop_binary() {
        let dir = dir_with(&["gatehouse-desktop", "gatehouse"]);
        let found = locate_from(None, &dir.path().join("gatehouse-desktop")).unwrap();
        assert_eq!(found, dir.path().join("gatehouse").canonicalize().unwrap());
        assert!(found.is_absolute());
    }

    #[test]
    fn the_environment_wins_over_the_sibling() {
        let app = dir_with(&["gatehouse-desktop", "gatehouse"]);
        let other = dir_with(&["my-gatehouse"]);
        let named = other.path().join("my-gatehouse");
        let found = locate_from(
            Some(named.clone().into_os_string()),
            &app.path().join("gatehouse-desktop"),
        )
        .unwrap();
        assert_eq!(found, named.canonicalize().unwrap());
    }

    #[test]
    fn a_missing_binary_is_a_clear_error() {
        let dir = dir_with(&["gatehouse-desktop"]);
        let err = locate_from(None, &dir.path().join("gatehouse-desktop")).unwrap_err();
        assert_eq!(err.code, codes::CLI_BINARY_NOT_FOUND);
        assert!(
            err.message.contains("next to the desktop app"),
            "{}",
            err.message
        );
        assert!(err.hint.unwrap().contains(ENV_BIN));

        let err = locate_from(
            Some(dir.path().join("nope").into_os_string()),
            &dir.path().join("gatehouse-desktop"),
        )
        .unwrap_err();
        assert_eq!(err.code, codes::CLI_BINARY_NOT_FOUND);
        assert!(err.message.contains(ENV_BIN), "{}", err.message);
    }
}
