//! The Landlock layer: what the kernel offers ([`probe`]) and the ruleset
//! ([`ruleset`]) built in the host, which the child applies to itself just
//! before `exec` (see `child.rs`): read-only system paths, the command's
//! runtime paths and the profile's, read-write scratch and the profile's,
//! TCP per profile (ABI ≥ 4), signals and abstract sockets scoped (ABI ≥ 6).
//! Landlock also stops ptrace-class access (`/proc/PID/environ`,
//! `/proc/PID/mem`) to processes outside the child's domain, the host included.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};
use serde::Serialize;

use crate::error::{Error, Result, codes};
use crate::sandbox::profile::Profile;

/// System folders every child may read and execute from.
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/dev/urandom",
    "/dev/random",
    "/run/systemd/resolve",
];

/// Device files every child may write (and read).
pub const SYSTEM_READ_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LandlockSupport {
    /// Highest Landlock ABI found (0: none).
    pub abi: u8,
}

impl LandlockSupport {
    pub fn available(&self) -> bool {
        self.abi > 0
    }
    pub fn network(&self) -> bool {
        self.abi >= 4
    }
}

/// Asks the kernel once per process which Landlock ABI it offers (0: none,
/// or Landlock compiled in but not enabled at boot).
pub fn probe() -> LandlockSupport {
    static SUPPORT: OnceLock<LandlockSupport> = OnceLock::new();
    *SUPPORT.get_or_init(|| LandlockSupport {
        abi: super::sys::landlock_abi(),
    })
}

fn add_path(
    ruleset: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(ruleset); // absent here: nothing to allow
    };
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(RULESET_ABI)
    };
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(landlock_error)
}

fn landlock_error(e: impl std::fmt::Display) -> Error {
    Error::new(
        codes::SPAWN_FAILED,
        format!("could not build the Landlock ruleset: {e}"),
    )
}

/// The Landlock ABI whose rights the ruleset handles (the crate drops what
/// the kernel lacks); the scratch tmpfs's rule grants the same
/// ([`super::view::ReadOnlyView::grant_scratch`]).
pub(crate) const RULESET_ABI: ABI = ABI::V6;

/// Builds the ruleset for a child of `profile` running in `scratch`; `None`
/// when the kernel has no Landlock (the caller says so and runs without it).
pub fn ruleset(
    profile: &Profile,
    scratch: &Path,
    runtime: &[PathBuf],
) -> Result<Option<RulesetCreated>> {
    if !probe().available() {
        return Ok(None);
    }
    let abi = RULESET_ABI;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut base = Ruleset::default()
        .handle_access(all)
        .map_err(landlock_error)?
        .scope(Scope::from_all(abi))
        .map_err(landlock_error)?;
    if !profile.network {
        // Handled: no TCP connect or bind but to the listed ports.
        base = base
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock_error)?;
    }
    let mut r = base.create().map_err(landlock_error)?;
    if !profile.network {
        for port in &profile.connect_ports {
            r = r
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(landlock_error)?;
        }
    }
    for p in SYSTEM_READ_ONLY {
        r = add_path(r, Path::new(p), read)?;
    }
    for p in SYSTEM_READ_WRITE {
        r = add_path(r, Path::new(p), read | AccessFs::WriteFile)?;
    }
    for p in runtime.iter().chain(&profile.read_only) {
        r = add_path(r, p, read)?;
    }
    for p in profile
        .read_write
        .iter()
        .map(PathBuf::as_path)
        .chain([scratch])
    {
        r = add_path(r, p, all)?;
    }
    Ok(Some(r))
}
