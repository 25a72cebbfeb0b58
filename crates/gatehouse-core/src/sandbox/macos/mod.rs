//! The macOS backend (interface of `sandbox/mod.rs`, "The backend
//! interface"): the child under Seatbelt (`sandbox-exec` with the profile
//! [`super::seatbelt`] builds).
//!
//! Until it is wired, every spawn is refused with `SANDBOX_UNAVAILABLE`
//! (never run unconfined), and the status says so.

use std::collections::BTreeMap;
use std::path::Path;

use tokio::process::{Child, Command};

use super::probe::Isolation;
use super::process::{GroupUsage, ProcId, ProcessGroup, Stop};
use super::profile::Profile;
use super::scratch::{ScratchDir, ScratchRoot};
use super::spec::{ChildSpec, ResolvedValue};
use crate::error::{Error, Result, codes};

/// System folders every child may read and execute from.
pub const SYSTEM_READ_ONLY: &[&str] = &["/usr", "/bin", "/sbin", "/System", "/Library"];

fn unavailable() -> Error {
    Error::invalid(
        codes::SANDBOX_UNAVAILABLE,
        "this build has no macOS sandbox backend yet: servers cannot be started confined",
        "run Gatehouse on Linux for now",
    )
}

/// One child's plan (see the interface in `sandbox/mod.rs`).
pub(crate) struct Plan {
    program: String,
    args: Vec<String>,
}

impl Plan {
    pub fn new(
        _spec: &ChildSpec,
        _env: &BTreeMap<String, ResolvedValue>,
        _root: &ScratchRoot,
        _scratch: &Path,
        _profile: &Profile,
        _isolation: &Isolation,
    ) -> Result<Self> {
        Err(unavailable())
    }

    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn args(&self) -> &[String] {
        &self.args
    }

    pub fn spawn(
        self,
        _cmd: Command,
        _scratch: &mut ScratchDir,
    ) -> std::io::Result<(Child, Guard)> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no macOS sandbox backend",
        ))
    }
}

/// What the backend keeps of a running child.
#[derive(Debug)]
pub(crate) struct Guard {
    seen: Vec<ProcId>,
}

impl Guard {
    pub fn descendants(&self) -> &[ProcId] {
        &self.seen
    }

    pub fn watch(&mut self, scratch: &mut ScratchDir, _isolation: &Isolation) -> u64 {
        scratch.usage_bytes().unwrap_or(u64::MAX)
    }

    pub async fn kill_escaped(&mut self, _pid: i32) -> usize {
        0
    }

    pub fn kill_now(&self) {}
}

/// What applies here: nothing yet, and the status says so.
pub fn describe(profile: &Profile) -> Isolation {
    Isolation {
        backend: profile.backend.as_str(),
        landlock_abi: 0,
        read_only_view: false,
        network: true,
        connect_ports: Vec::new(),
        scratch_quota_bytes: profile.scratch_quota(),
        unix_sockets: true,
        nice: 0,
        warnings: vec!["no macOS sandbox backend in this build: connecting is refused".to_string()],
    }
}

impl ProcId {
    pub fn of(pid: i32) -> Option<ProcId> {
        (pid as u32 == std::process::id()).then_some(ProcId { pid, start: 0 })
    }

    pub fn exists(&self) -> bool {
        false
    }

    pub fn is_live(&self) -> bool {
        false
    }

    pub fn kill_if_same(&self) -> bool {
        false
    }
}

impl ProcessGroup {
    pub fn signal(&self, _stop: Stop) -> Result<bool> {
        Ok(false)
    }

    pub fn members(&self) -> Vec<i32> {
        Vec::new()
    }

    pub fn live_members(&self) -> Vec<i32> {
        Vec::new()
    }

    pub fn usage(&self) -> GroupUsage {
        GroupUsage::default()
    }

    pub fn usage_with(&self, _tracked: &[ProcId]) -> GroupUsage {
        GroupUsage::default()
    }

    pub fn reap_children(&self) -> usize {
        0
    }
}

pub(crate) fn kill_leftovers(_recorded: Vec<ProcId>, _dir: &Path) -> Vec<ProcId> {
    Vec::new()
}

pub fn harden_host() -> Result<()> {
    Ok(())
}

pub fn become_subreaper() -> Result<()> {
    Ok(())
}

pub(crate) fn lower_thread_priority(_wanted: u8) -> std::io::Result<()> {
    Ok(())
}
