//! The backend interface (`sandbox/mod.rs` names it) on Windows: [`Plan`]
//! (everything decided in the host before the child exists), [`Guard`]
//! (what is kept of a running child: its job, its grants, what was applied),
//! [`describe`], and the host-level calls the other systems need.
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::process::Command;
use windows_sys::Win32::System::Threading::{
    GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL, THREAD_PRIORITY_IDLE,
};

use super::child::Child;
use super::command_line::{self, Launch};
use super::env_block;
use super::job::{self, Job};
use super::plan::{self, Applied, JobPlan, WindowsStatus};
use super::procs;
use super::token::{self, ConnectionSid};
use crate::error::{Error, Result, codes};
use crate::sandbox::probe::Isolation;
use crate::sandbox::process::ProcId;
use crate::sandbox::profile::Profile;
use crate::sandbox::scratch::{ScratchDir, ScratchRoot};
use crate::sandbox::spec::{ChildSpec, ResolvedValue};

/// No system folder list: the Windows backend confines writes, not reads.
pub const SYSTEM_READ_ONLY: &[&str] = &[];

/// `%SystemRoot%` of the host (what Windows' own programs live under).
pub fn system_root() -> String {
    std::env::var("SystemRoot").unwrap_or_else(|_| r"C:\Windows".to_string())
}

fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The connection's CPU-time budget, which the job holds too.
fn cpu_budget(profile: &Profile) -> Option<Duration> {
    profile.max_cpu_ms.map(Duration::from_millis)
}

/// Everything decided in the host before the child exists.
pub(crate) struct Plan {
    launch: Launch,
    program: String,
    args: Vec<String>,
    env: Vec<u16>,
    job: JobPlan,
}

impl Plan {
    pub fn new(
        spec: &ChildSpec,
        env: &BTreeMap<String, ResolvedValue>,
        _root: &ScratchRoot,
        scratch: &Path,
        profile: &Profile,
        _isolation: &Isolation,
    ) -> Result<Self> {
        let root = system_root();
        let scratch_text = scratch.to_string_lossy().into_owned();
        // The shared default PATH is a Unix one: unless the connection lists
        // its own, the child gets the Windows system folders.
        let listed_path = spec.env.keys().any(|k| k.eq_ignore_ascii_case("PATH"));
        let vars: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| {
                let value = if k == "PATH" && !listed_path {
                    env_block::default_path(&root)
                } else {
                    v.expose().to_string()
                };
                (k.clone(), value)
            })
            .collect();
        let vars = env_block::merge(env_block::windows_additions(&root, &scratch_text), vars);
        let block = env_block::block(&vars)?;
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let path = get("PATH").unwrap_or_default();
        let pathext = get("PATHEXT").unwrap_or(command_line::DEFAULT_PATHEXT);
        let resolved = command_line::resolve(&spec.program, path, pathext, |p| {
            Path::new(p).is_file()
        })
        .ok_or_else(|| {
            Error::new(
                codes::SPAWN_FAILED,
                format!("{} was not found on the connection's PATH", spec.program),
            )
            .hint(format!(
                "list the folder holding it in the connection's PATH (the host's PATH is not used; PATHEXT {pathext} applies), or give its full path"
            ))
        })?;
        let launch =
            command_line::launch(&resolved, &spec.args, &format!(r"{root}\System32\cmd.exe"))?;
        let job = plan::plan(profile, scratch.to_path_buf(), cpu_budget(profile), cores())?;
        Ok(Plan {
            launch,
            program: resolved,
            args: spec.args.clone(),
            env: block,
            job,
        })
    }

    /// The program as resolved (a script runs through `cmd.exe`).
    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Starts the child in its job, under its token, and records it beside
    /// its scratch directory. `cmd` is not run: tokio's `Command` cannot take
    /// a token or a handle list; the plan holds the same environment,
    /// directory and pipes.
    pub fn spawn(self, _cmd: Command, scratch: &mut ScratchDir) -> std::io::Result<(Child, Guard)> {
        let mut applied = Applied::default();
        let job = Arc::new(Job::create(&self.job, &mut applied)?);
        let mut granted = Vec::new();
        let (sid, token) = match &self.job.token {
            Some(plan) => {
                let sid = ConnectionSid::random();
                applied.write_grants = true;
                for path in &plan.writable {
                    match token::grant_write(path, &sid) {
                        Ok(()) => granted.push(path.clone()),
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "write grant refused");
                            applied.write_grants = false;
                        }
                    }
                }
                let token = token::restricted_token(plan, &sid)?;
                (Some(sid), Some(token))
            }
            None => (None, None),
        };
        let mut guard = Guard {
            job: job.clone(),
            pid: -1,
            sid,
            granted,
            scratch: scratch.path().to_path_buf(),
            seen: Vec::new(),
            plan: self.job.clone(),
            applied: Applied::default(),
        };
        let started = super::process::start(
            &self.launch,
            &self.env,
            scratch.path(),
            token.as_ref(),
            &job,
        )?;
        applied.in_job = started.in_job;
        applied.handle_list = true;
        applied.restricted_token =
            token.is_some() && token::process_is_restricted(&started.process);
        let pid = started.pid as i32;
        let leader = ProcId {
            pid,
            start: job::creation_time(&started.process).unwrap_or(0),
        };
        procs::register(pid, job);
        guard.pid = pid;
        guard.seen.push(leader);
        guard.applied = applied;
        if let Err(e) = scratch.record(Some(leader), &[]) {
            tracing::warn!(error = %e, "child not recorded; a killed host leaves it to the job");
        }
        Ok((Child::new(started)?, guard))
    }
}

/// What the Windows backend keeps of a running child. Dropping it ends the
/// job (the registry's reference goes too) and takes back the write grants
/// on the profile's read-write paths.
#[derive(Debug)]
pub(crate) struct Guard {
    job: Arc<Job>,
    pid: i32,
    sid: Option<ConnectionSid>,
    granted: Vec<PathBuf>,
    scratch: PathBuf,
    seen: Vec<ProcId>,
    plan: JobPlan,
    applied: Applied,
}

impl std::fmt::Debug for ConnectionSid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Guard {
    /// Every process the job has been seen holding.
    pub fn descendants(&self) -> &[ProcId] {
        &self.seen
    }

    /// What the system applied for this child.
    pub fn status(&self) -> WindowsStatus {
        plan::status(&self.plan, &self.applied)
    }

    /// The status to report for this child: `base` with what applied.
    pub fn isolation(&self, base: &Isolation) -> Isolation {
        with_status(base.clone(), self.status())
    }

    /// Records the job's processes (for the next start, should this host be
    /// killed) and returns the bytes scratch holds.
    pub fn watch(&mut self, scratch: &mut ScratchDir, _isolation: &Isolation) -> u64 {
        let mut grew = false;
        for pid in self.job.pids() {
            if let Some(p) = ProcId::of(pid as i32)
                && !self.seen.contains(&p)
            {
                self.seen.push(p);
                grew = true;
            }
        }
        if grew {
            let _ = scratch.record(None, &self.seen);
        }
        scratch.usage_bytes().unwrap_or(u64::MAX)
    }

    /// Ends what is left in the job and waits (bounded) for it to be gone.
    /// Nothing escapes a job (breakaway is not allowed), so it returns 0.
    pub async fn kill_escaped(&mut self, pid: i32) -> usize {
        if self.job.counters().active_processes > 0 {
            self.job.terminate(procs::KILLED_EXIT_CODE);
        }
        for _ in 0..200 {
            if self.job.counters().active_processes == 0 {
                return 0;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tracing::warn!(pid, "processes of the job survived its termination");
        0
    }

    /// At once, without waiting (a dropped connection).
    pub fn kill_now(&self) {
        self.job.terminate(procs::KILLED_EXIT_CODE);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.job.terminate(procs::KILLED_EXIT_CODE);
        procs::unregister(self.pid);
        if let Some(sid) = &self.sid {
            // Scratch goes whole; the profile's paths outlive the connection.
            for path in self.granted.iter().filter(|p| **p != self.scratch) {
                if let Err(e) = token::revoke_write(path, sid) {
                    tracing::warn!(path = %path.display(), error = %e, "write grant not taken back");
                }
            }
        }
    }
}

fn with_status(mut base: Isolation, status: WindowsStatus) -> Isolation {
    base.backend = status.backend;
    base.landlock_abi = 0;
    base.read_only_view = false;
    base.network = status.network;
    base.connect_ports = Vec::new();
    // Nothing here refuses a UNIX socket.
    base.unix_sockets = true;
    base.warnings = status.warnings;
    base.layers = status.layers;
    base
}

/// How a child of `profile` is confined here: the plan tried on a job and a
/// token made for the purpose (each limit the system refuses is named), the
/// spawn-time facts (the child in the job, the handle list) as the spawn
/// enforces them (it fails rather than run without).
pub fn describe(profile: &Profile) -> Isolation {
    let base = Isolation {
        backend: "job_object",
        landlock_abi: 0,
        read_only_view: false,
        network: true,
        connect_ports: Vec::new(),
        scratch_quota_bytes: profile.scratch_quota(),
        unix_sockets: true,
        nice: profile.nice(),
        layers: Vec::new(),
        warnings: Vec::new(),
    };
    let scratch = std::env::temp_dir();
    let plan = match plan::plan(profile, scratch, cpu_budget(profile), cores()) {
        Ok(plan) => plan,
        Err(e) => {
            let mut base = base;
            base.warnings.push(e.message.clone());
            base.layers.push(crate::sandbox::probe::Layer::not_applied(
                crate::sandbox::probe::LayerName::JobObject,
                e.message.clone(),
            ));
            return base;
        }
    };
    let mut applied = Applied::default();
    if Job::create(&plan, &mut applied).is_ok() {
        applied.in_job = true;
        applied.handle_list = true;
    }
    if let Some(t) = &plan.token {
        let ok = token::restricted_token(t, &ConnectionSid::random())
            .is_ok_and(|token| token::is_restricted(&token));
        applied.restricted_token = ok;
        applied.write_grants = ok;
    }
    with_status(base, plan::status(&plan, &applied))
}

/// Ends what a dead host's run left running: the recorded processes that
/// are still the same ones (with `KILL_ON_JOB_CLOSE` the job ended them
/// with the host; this is for a host whose job handle leaked).
pub(crate) fn kill_leftovers(recorded: Vec<ProcId>, _dir: &Path) -> Vec<ProcId> {
    let killed: Vec<ProcId> = recorded.into_iter().filter(|p| p.kill_if_same()).collect();
    for _ in 0..200 {
        if killed.iter().all(|p| !p.is_live()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    killed
}

/// Nothing to harden on Windows: another user's process cannot open ours
/// without the debug privilege, which no standard user holds.
pub fn harden_host() -> Result<()> {
    Ok(())
}

/// Nothing to become: the job holds every descendant, re-parented or not.
pub fn become_subreaper() -> Result<()> {
    Ok(())
}

/// Lowers the calling thread's priority (for the stderr reader thread).
pub(crate) fn lower_thread_priority(wanted: u8) -> std::io::Result<()> {
    let priority = match plan::Priority::from_nice(wanted) {
        plan::Priority::Normal => return Ok(()),
        plan::Priority::BelowNormal => THREAD_PRIORITY_BELOW_NORMAL,
        plan::Priority::Idle => THREAD_PRIORITY_IDLE,
    };
    // SAFETY: the pseudo-handle of the calling thread and a valid priority.
    if unsafe { SetThreadPriority(GetCurrentThread(), priority) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
