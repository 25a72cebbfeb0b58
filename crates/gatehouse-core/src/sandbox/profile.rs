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
/// Scheduling niceness of a child: below the admin's own programs, so a busy
/// or hostile server cannot starve the window that supervises it (ten
/// CPU-bound servers: frame p95 248 → 100 ms; docs/bench.md).
pub const DEFAULT_NICE: u8 = 10;

/// What confines the child. Each system has its own (see [`Backend::here`]);
/// `none` exists everywhere. A profile naming a backend this system lacks is
/// refused, never run under another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Landlock applied in the child before `exec` (filesystem, TCP, signals,
    /// ptrace), plus `no_new_privs` and resource limits. Linux default.
    Landlock,
    /// The command runs under `bwrap`: private mount namespace (system paths
    /// read-only, scratch read-write, nothing else), no network unless allowed,
    /// its own PID namespace. (Landlock is not stacked under it: a Landlock
    /// domain forbids the mounts bwrap makes to set up.)
    Bwrap,
    /// macOS: the command runs under `sandbox-exec` with a Seatbelt profile
    /// generated from this one (see `sandbox::seatbelt`). macOS default.
    Seatbelt,
    /// Windows: a Job Object per connection (every descendant dies with it,
    /// memory and process ceilings) and a restricted token. Windows default.
    JobObject,
    /// Resource limits (and `no_new_privs` on Linux) only: the child can
    /// reach anything the host user can. For servers the other backends break.
    None,
}

impl Default for Backend {
    /// This system's confining backend.
    fn default() -> Self {
        if cfg!(target_os = "macos") {
            Backend::Seatbelt
        } else if cfg!(windows) {
            Backend::JobObject
        } else {
            Backend::Landlock
        }
    }
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Landlock => "landlock",
            Backend::Bwrap => "bwrap",
            Backend::Seatbelt => "seatbelt",
            Backend::JobObject => "job_object",
            Backend::None => "none",
        }
    }

    /// The backends this system has (its default first).
    pub fn here() -> &'static [Backend] {
        if cfg!(target_os = "linux") {
            &[Backend::Landlock, Backend::Bwrap, Backend::None]
        } else if cfg!(target_os = "macos") {
            &[Backend::Seatbelt, Backend::None]
        } else if cfg!(windows) {
            &[Backend::JobObject, Backend::None]
        } else {
            &[Backend::None]
        }
    }

    /// The backends this system has, as a hint lists them.
    fn here_text() -> String {
        Backend::here()
            .iter()
            .map(|b| b.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn parse(text: &str) -> Result<Backend> {
        match text {
            "landlock" => Ok(Backend::Landlock),
            "bwrap" => Ok(Backend::Bwrap),
            "seatbelt" => Ok(Backend::Seatbelt),
            "job_object" => Ok(Backend::JobObject),
            "none" => Ok(Backend::None),
            other => Err(Error::invalid(
                codes::SANDBOX_PROFILE_INVALID,
                format!("{other:?} is not a sandbox backend"),
                format!("use one of this system's: {}", Backend::here_text()),
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
    /// UNIX sockets (`socket(AF_UNIX)`): off, the child cannot reach a
    /// named socket such as the user's D-Bus bus (anonymous `socketpair`s
    /// still work). Landlock backend only (bwrap hides the host's sockets
    /// behind its own mounts).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unix_sockets: bool,
    /// With `network` off: the TCP ports the child may connect to (any
    /// address), and nothing else of TCP. Landlock backend only (ABI ≥ 4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_ports: Vec<u16>,
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
    /// CPU-time budget of the whole group, in milliseconds; the
    /// connection's when unset here. The owner's watchdog holds it on every
    /// system, and the Job Object on Windows too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cpu_ms: Option<u64>,
    /// Scheduling niceness, 0 (as the host) to 19 (only idle time); a child
    /// can raise it further but never lower it (that needs a capability it
    /// does not have).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<u8>,
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

    pub fn nice(&self) -> u8 {
        self.nice.unwrap_or(DEFAULT_NICE)
    }

    /// Refuses what would confine less than it says or fail only at connect:
    /// relative, missing or `..` paths (a relative path would be relative to
    /// whatever directory the host happens to run in), `/` itself, paths with
    /// the `none` backend (nothing confines them, so listing them misleads),
    /// and ceilings of zero or above what this user may set.
    pub fn validate(&self) -> Result<()> {
        let bad = |message: String, hint: &str| {
            Err(Error::invalid(
                codes::SANDBOX_PROFILE_INVALID,
                message,
                hint,
            ))
        };
        if !Backend::here().contains(&self.backend) {
            return Err(Error::invalid(
                codes::SANDBOX_UNAVAILABLE,
                format!(
                    "the {} sandbox backend does not exist on {}",
                    self.backend.as_str(),
                    std::env::consts::OS
                ),
                format!(
                    "choose one of this system's backends with --sandbox: {}",
                    Backend::here_text()
                ),
            ));
        }
        for (flag, p) in self
            .read_only
            .iter()
            .map(|p| ("--allow-read", p))
            .chain(self.read_write.iter().map(|p| ("--allow-write", p)))
        {
            if self.backend == Backend::None {
                return bad(
                    format!("{flag} {} has no effect with the none backend", p.display()),
                    "the none backend confines nothing; choose this system's confining backend with --sandbox, or drop the path",
                );
            }
            if !p.is_absolute() {
                return bad(
                    format!("{flag} {} is not an absolute path", p.display()),
                    "list paths the server may use as absolute paths, e.g. /srv/data",
                );
            }
            if p.components().any(|c| c == std::path::Component::ParentDir) {
                return bad(
                    format!("{flag} {} contains '..'", p.display()),
                    "write the path without '..' components",
                );
            }
            if p.parent().is_none() {
                return bad(
                    format!("{flag} / would open the whole file system"),
                    "list the folders the server needs, not /",
                );
            }
            if !p.exists() {
                return bad(
                    format!("{flag} {} does not exist", p.display()),
                    "create it first, or check the spelling (a path that appears later is not picked up)",
                );
            }
        }
        self.honoured_on(std::env::consts::OS)?;
        if !self.connect_ports.is_empty() {
            if self.network {
                return bad(
                    "--allow-port with --network: every port is allowed already".to_string(),
                    "drop --network to allow only the listed ports",
                );
            }
            if self.connect_ports.contains(&0) {
                return bad(
                    "--allow-port 0 is not a port".to_string(),
                    "give ports 1-65535",
                );
            }
        }
        if self.scratch_quota_bytes.is_some_and(|q| q < 1 << 20) {
            return bad(
                "the scratch quota is below 1 MiB".to_string(),
                "give at least 1MiB, e.g. --scratch-quota 64MiB",
            );
        }
        if self.max_processes == Some(0) {
            return bad(
                "--max-processes 0 would stop the server from starting".to_string(),
                "allow at least 1 process (the server itself)",
            );
        }
        if let Some(n) = self.max_open_files {
            #[cfg(unix)]
            let hard = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map(|(_, hard)| hard)
                .unwrap_or(u64::MAX);
            #[cfg(not(unix))]
            let hard = u64::MAX;
            if n < 16 {
                return bad(
                    format!("--max-open-files {n} is too low for any interpreter to start"),
                    "allow at least 16 open files",
                );
            }
            if n > hard {
                return bad(
                    format!("--max-open-files {n} is above this user's hard limit ({hard})"),
                    "choose a value at or below `ulimit -Hn`",
                );
            }
        }
        if let Some(n) = self.nice.filter(|n| *n > 19) {
            return bad(
                format!("--nice {n} is out of range"),
                "give a niceness from 0 (as the host) to 19 (idle time only)",
            );
        }
        if self.max_memory_bytes.is_some_and(|m| m < 16 << 20) {
            return bad(
                "the memory ceiling is below 16 MiB".to_string(),
                "give at least 16MiB",
            );
        }
        Ok(())
    }

    /// Refuses (`SANDBOX_PROFILE_INVALID`) an option this profile's backend
    /// cannot honour on system `os` (`linux`, `macos`, `windows`), rather
    /// than run the server without it. Pure, so every system's answer is
    /// tested on every system; the Windows plan refuses the same again.
    pub fn honoured_on(&self, os: &str) -> Result<()> {
        let bad = |message: String, hint: &str| {
            Err(Error::invalid(
                codes::SANDBOX_PROFILE_INVALID,
                message,
                hint,
            ))
        };
        if self.unix_sockets && self.backend != Backend::Landlock {
            return bad(
                format!(
                    "--allow-unix-sockets needs the landlock backend (this connection uses {})",
                    self.backend.as_str()
                ),
                "the none backend refuses no socket, bwrap shows the server only the paths it binds (and, with --network, the host's abstract sockets), Seatbelt opens them only with --network, and Windows refuses none",
            );
        }
        if !self.connect_ports.is_empty()
            && !matches!(self.backend, Backend::Landlock | Backend::Seatbelt)
        {
            return bad(
                format!(
                    "--allow-port needs the landlock or seatbelt backend (this connection uses {})",
                    self.backend.as_str()
                ),
                "this backend's network is all or nothing: use --network, or --sandbox landlock (Linux) / seatbelt (macOS)",
            );
        }
        if os == "windows"
            && let Some(n) = self.max_open_files
        {
            return bad(
                format!(
                    "--max-open-files {n} cannot be honoured on Windows: it has no per-process handle ceiling"
                ),
                "drop --max-open-files for a connection that runs on Windows",
            );
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
        assert_eq!(p.backend, Backend::here()[0]);
        assert!(!p.network);
        assert_eq!(p.scratch_quota(), DEFAULT_SCRATCH_QUOTA);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            format!(
                r#"{{"backend":"{}","network":false}}"#,
                Backend::here()[0].as_str()
            )
        );
        assert!(Backend::parse("bwrap").is_ok());
        assert!(Backend::parse("docker").is_err());
    }

    /// Every option against every backend of every system: what a backend
    /// cannot honour is refused with a code and a hint, what it can is not.
    #[test]
    fn options_a_backend_cannot_honour_are_refused_on_every_system() {
        let systems: [(&str, &[Backend]); 3] = [
            ("linux", &[Backend::Landlock, Backend::Bwrap, Backend::None]),
            ("macos", &[Backend::Seatbelt, Backend::None]),
            ("windows", &[Backend::JobObject, Backend::None]),
        ];
        for (os, backends) in systems {
            for &backend in backends {
                let base = Profile {
                    backend,
                    ..Profile::default()
                };
                let options: [(&str, Profile, bool); 5] = [
                    (
                        "unix sockets",
                        Profile {
                            unix_sockets: true,
                            ..base.clone()
                        },
                        backend == Backend::Landlock,
                    ),
                    (
                        "ports",
                        Profile {
                            connect_ports: vec![443],
                            ..base.clone()
                        },
                        matches!(backend, Backend::Landlock | Backend::Seatbelt),
                    ),
                    (
                        "open files",
                        Profile {
                            max_open_files: Some(64),
                            ..base.clone()
                        },
                        os != "windows",
                    ),
                    (
                        "network",
                        Profile {
                            network: true,
                            ..base.clone()
                        },
                        true,
                    ),
                    (
                        "ceilings",
                        Profile {
                            max_processes: Some(8),
                            max_memory_bytes: Some(64 << 20),
                            max_cpu_ms: Some(1000),
                            nice: Some(19),
                            scratch_quota_bytes: Some(8 << 20),
                            ..base.clone()
                        },
                        true,
                    ),
                ];
                for (what, profile, honoured) in options {
                    let got = profile.honoured_on(os);
                    assert_eq!(got.is_ok(), honoured, "{os} {backend:?} {what}: {got:?}");
                    if let Err(e) = got {
                        assert_eq!(e.code, codes::SANDBOX_PROFILE_INVALID);
                        assert!(e.hint.is_some());
                    }
                }
            }
        }
    }

    #[test]
    fn profiles_that_confine_less_than_they_say_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = Profile {
            read_only: vec![tmp.path().to_path_buf()],
            scratch_quota_bytes: Some(8 << 20),
            max_processes: Some(4),
            // Windows has no per-process handle ceiling: refused there.
            max_open_files: (!cfg!(windows)).then_some(64),
            ..Profile::default()
        };
        ok.validate().unwrap();
        let cases = [
            Profile {
                read_only: vec!["data".into()],
                ..Profile::default()
            },
            Profile {
                read_write: vec![tmp.path().join("missing")],
                ..Profile::default()
            },
            Profile {
                read_write: vec![tmp.path().join("../x")],
                ..Profile::default()
            },
            Profile {
                read_only: vec!["/".into()],
                ..Profile::default()
            },
            Profile {
                backend: Backend::None,
                read_only: vec![tmp.path().to_path_buf()],
                ..Profile::default()
            },
            Profile {
                scratch_quota_bytes: Some(1000),
                ..Profile::default()
            },
            Profile {
                max_processes: Some(0),
                ..Profile::default()
            },
            Profile {
                connect_ports: vec![443],
                network: true,
                ..Profile::default()
            },
            Profile {
                connect_ports: vec![443],
                backend: Backend::None,
                ..Profile::default()
            },
            Profile {
                max_open_files: Some(3),
                ..Profile::default()
            },
            Profile {
                max_open_files: Some(u64::MAX - 1),
                ..Profile::default()
            },
        ];
        for p in cases {
            let e = p.validate().expect_err(&format!("{p:?}"));
            assert_eq!(e.code, codes::SANDBOX_PROFILE_INVALID, "{p:?}");
            assert!(e.hint.is_some());
        }
    }
}
