//! A connection's isolation profile: which backend confines the child, which
//! extra paths it may read or write, whether it may use TCP, and its ceilings
//! (scratch disk, processes, open files, memory). The default is the narrow
//! one; an admin widens it per connection and it is stored with the connection.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, codes};

/// Scratch disk a child may fill unless its profile says otherwise.
pub const DEFAULT_SCRATCH_QUOTA: u64 = 256 << 20;
/// Processes a child may add to its user's count (`RLIMIT_NPROC` counts all of them).
pub const DEFAULT_MAX_PROCESSES: u64 = 256;
/// Open files per process (`RLIMIT_NOFILE`).
pub const DEFAULT_MAX_OPEN_FILES: u64 = 1024;

/// What confines the child.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Landlock applied in the child before `exec` (filesystem, TCP, signals,
    /// ptrace), plus `no_new_privs` and resource limits. Linux default.
    #[default]
    Landlock,
    /// The command runs under `bwrap`: private mount namespace (system paths
    /// read-only, scratch read-write, nothing else), no network unless allowed,
    /// its own PID namespace; Landlock is applied too when available.
    Bwrap,
    /// Resource limits and `no_new_privs` only: the child can reach anything
    /// the host user can. For servers the other backends break.
    None,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Landlock => "landlock",
            Backend::Bwrap => "bwrap",
            Backend::None => "none",
        }
    }

    pub fn parse(text: &str) -> Result<Backend> {
        match text {
            "landlock" => Ok(Backend::Landlock),
            "bwrap" => Ok(Backend::Bwrap),
            "none" => Ok(Backend::None),
            other => Err(Error::invalid(
                codes::INPUT_INVALID,
                format!("{other:?} is not a sandbox backend"),
                "use landlock, bwrap or none",
            )),
        }
    }
}

/// A connection's isolation profile. Every field has a narrow default, so a
/// stored connection without one gets the default profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    pub backend: Backend,
    /// Extra paths the child may read (and execute), e.g. a data folder.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<PathBuf>,
    /// Extra paths the child may write, e.g. a site folder it serves.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_write: Vec<PathBuf>,
    /// TCP connect and bind (off: the child cannot use TCP at all).
    pub network: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scratch_quota_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_files: Option<u64>,
    /// Address-space ceiling of each process (`RLIMIT_DATA`); the connection's
    /// memory limit when unset here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_bytes: Option<u64>,
}

impl Profile {
    pub fn scratch_quota(&self) -> u64 {
        self.scratch_quota_bytes.unwrap_or(DEFAULT_SCRATCH_QUOTA)
    }

    pub fn max_processes(&self) -> u64 {
        self.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES)
    }

    pub fn max_open_files(&self) -> u64 {
        self.max_open_files.unwrap_or(DEFAULT_MAX_OPEN_FILES)
    }

    /// Refuses relative or missing paths (a relative path would be relative
    /// to whatever directory the host happens to run in).
    pub fn validate(&self) -> Result<()> {
        for p in self.read_only.iter().chain(&self.read_write) {
            if !p.is_absolute() {
                return Err(Error::invalid(
                    codes::INPUT_INVALID,
                    format!("sandbox path {} is not absolute", p.display()),
                    "list paths the server may use as absolute paths",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_profile_is_the_narrow_default() {
        let p: Profile = serde_json::from_str("{}").unwrap();
        assert_eq!(p, Profile::default());
        assert_eq!(p.backend, Backend::Landlock);
        assert!(!p.network);
        assert_eq!(p.scratch_quota(), DEFAULT_SCRATCH_QUOTA);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"backend":"landlock","network":false}"#
        );
        assert!(Backend::parse("bwrap").is_ok());
        assert!(Backend::parse("docker").is_err());
        let rel = Profile {
            read_only: vec!["data".into()],
            ..Profile::default()
        };
        assert!(rel.validate().is_err());
    }
}
