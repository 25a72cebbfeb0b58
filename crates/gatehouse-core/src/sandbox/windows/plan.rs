//! The job plan: what the Windows backend asks of the system for one
//! connection, computed from its [`Profile`] alone, and the status derived
//! from what the system then applied ([`Applied`] → [`WindowsStatus`]).
//!
//! Pure, so its tests run on every system; `job.rs` and `token.rs` carry the
//! plan out on Windows and fill in [`Applied`].

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result, codes};
use crate::sandbox::probe::{Layer, LayerName, millis_text, size_text};
use crate::sandbox::profile::{Backend, Profile};

/// Job memory ceiling when neither the profile nor the connection names one:
/// a connection added without `--max-rss` must not run without a ceiling.
pub const DEFAULT_JOB_MEMORY: u64 = 1 << 30;
/// Job CPU-time budget (user time of every process of the job, summed) when
/// the connection names none.
pub const DEFAULT_JOB_CPU_TIME: Duration = Duration::from_secs(10 * 60);

/// The scheduling class of every process of the job (Windows has no
/// per-process niceness; the job's priority class is the lever).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Normal,
    BelowNormal,
    Idle,
}

impl Priority {
    /// Niceness 0 runs as the host; 1–14 below normal; 15–19 only in idle time.
    pub fn from_nice(nice: u8) -> Self {
        match nice {
            0 => Priority::Normal,
            1..=14 => Priority::BelowNormal,
            _ => Priority::Idle,
        }
    }
}

/// What the child's token is made of (see `token.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenPlan {
    /// `WRITE_RESTRICTED`: a write is allowed only where the restricting SID
    /// is granted it too (reads are not restricted).
    pub write_restricted: bool,
    /// `DISABLE_MAX_PRIVILEGE`: every privilege but SeChangeNotify removed.
    pub disable_max_privilege: bool,
    /// `LUA_TOKEN`: the token of a standard user even if the host is elevated.
    pub lua_token: bool,
    /// Group SIDs made deny-only, so an ACE granting them grants nothing.
    pub disabled_sids: Vec<DangerousSid>,
    /// Where the restricting SID gets write access: scratch first, then the
    /// profile's read-write paths.
    pub writable: Vec<PathBuf>,
}

/// Well-known groups whose membership would give a child more than the user's
/// own files: made deny-only in its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DangerousSid {
    /// BUILTIN\Administrators (an elevated host's children would inherit it).
    Administrators,
    /// BUILTIN\Power Users.
    PowerUsers,
    /// BUILTIN\Backup Operators (read/write anything through backup semantics).
    BackupOperators,
    /// NT AUTHORITY\SYSTEM, NETWORK SERVICE, LOCAL SERVICE (a service host).
    LocalSystem,
    NetworkService,
    LocalService,
}

/// Every dangerous SID, in the order the token disables them.
pub const DANGEROUS_SIDS: [DangerousSid; 6] = [
    DangerousSid::Administrators,
    DangerousSid::PowerUsers,
    DangerousSid::BackupOperators,
    DangerousSid::LocalSystem,
    DangerousSid::NetworkService,
    DangerousSid::LocalService,
];

/// Everything the backend asks for one connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobPlan {
    /// `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: the last handle closed (the host
    /// gone, however it went) ends every process of the job.
    pub kill_on_job_close: bool,
    /// `JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION`: a crash ends the process
    /// instead of waiting on an error dialog nobody sees.
    pub die_on_unhandled_exception: bool,
    /// `JOB_OBJECT_LIMIT_ACTIVE_PROCESS`.
    pub active_processes: u32,
    /// `JOB_OBJECT_LIMIT_JOB_MEMORY`: committed memory of all its processes.
    pub job_memory_bytes: u64,
    /// `JOB_OBJECT_LIMIT_JOB_TIME`: user-mode CPU time of the job, summed.
    pub cpu_time: Duration,
    /// `JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP`, in hundredths of a percent of
    /// the machine: one core is always left to the rest of the desktop.
    /// `None` on a single-core machine (a cap would starve the server).
    pub cpu_rate: Option<u32>,
    /// `JOB_OBJECT_LIMIT_PRIORITY_CLASS`.
    pub priority: Priority,
    /// `JobObjectBasicUIRestrictions`, every `JOB_OBJECT_UILIMIT_*`: no
    /// clipboard, no use of windows outside the job (no messages typed into
    /// a terminal), no global atoms, desktops or system settings. A server
    /// on the user's desktop could otherwise reach past its token's write
    /// limits through another process's window.
    pub ui_limits: bool,
    /// `None` for the `none` backend: the user's own token, limits only.
    pub token: Option<TokenPlan>,
    /// The scratch quota, enforced by polling (`Sandboxed::watch`).
    pub scratch_quota_bytes: u64,
}

/// The plan for `profile` on a machine with `cores` logical processors;
/// `cpu_time` is the connection's CPU budget, if it names one. Refuses what
/// the backend cannot honour rather than dropping it.
pub fn plan(
    profile: &Profile,
    scratch: PathBuf,
    cpu_time: Option<Duration>,
    cores: u32,
) -> Result<JobPlan> {
    let refuse = |message: String, hint: &str| {
        Err(Error::invalid(
            codes::SANDBOX_PROFILE_INVALID,
            message,
            hint,
        ))
    };
    if !matches!(profile.backend, Backend::JobObject | Backend::None) {
        return refuse(
            format!(
                "the {} backend does not exist on Windows",
                profile.backend.as_str()
            ),
            "use job_object (a Job Object and a restricted token, the default) or none",
        );
    }
    if !profile.connect_ports.is_empty() {
        return refuse(
            "--allow-port cannot be honoured on Windows: nothing here restricts one process's network by port".to_string(),
            "drop --allow-port (the server's network is open on Windows; the status says so)",
        );
    }
    if let Some(n) = profile.max_open_files {
        return refuse(
            format!(
                "--max-open-files {n} cannot be honoured on Windows: it has no per-process handle ceiling"
            ),
            "drop --max-open-files for a connection that runs on Windows",
        );
    }
    let token = (profile.backend != Backend::None).then(|| {
        let mut writable = vec![scratch];
        writable.extend(profile.read_write.iter().cloned());
        TokenPlan {
            write_restricted: true,
            disable_max_privilege: true,
            lua_token: true,
            disabled_sids: DANGEROUS_SIDS.to_vec(),
            writable,
        }
    });
    Ok(JobPlan {
        kill_on_job_close: true,
        die_on_unhandled_exception: true,
        active_processes: u32::try_from(profile.max_processes()).unwrap_or(u32::MAX),
        job_memory_bytes: profile.max_memory_bytes.unwrap_or(DEFAULT_JOB_MEMORY),
        cpu_time: cpu_time.unwrap_or(DEFAULT_JOB_CPU_TIME),
        cpu_rate: (cores > 1).then(|| (cores - 1) * 10_000 / cores),
        priority: Priority::from_nice(profile.nice()),
        ui_limits: token.is_some(),
        token,
        scratch_quota_bytes: profile.scratch_quota(),
    })
}

/// What the system accepted of a [`JobPlan`], as the backend observed it
/// (each field `true` only when the call that applies it succeeded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The child runs in the job (`IsProcessInJob` said so after assignment).
    pub in_job: bool,
    pub kill_on_job_close: bool,
    pub active_processes: bool,
    pub job_memory: bool,
    pub cpu_time: bool,
    pub cpu_rate: bool,
    pub priority: bool,
    pub ui_limits: bool,
    /// The child's token is restricted (`IsTokenRestricted` on its token).
    pub restricted_token: bool,
    /// Scratch (and each read-write path) got the restricting SID's ACE.
    pub write_grants: bool,
    /// Only the three pipes were inherited (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`).
    pub handle_list: bool,
    /// The system accepted the job's limits but reported none of them back
    /// when asked (Wine): they stand in the status, with a warning.
    pub limits_unconfirmed: bool,
}

/// The Windows backend's status for one connection: every layer, applied
/// or not (why not in its detail), and in `warnings` every one that did not
/// apply or does not exist here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowsStatus {
    pub backend: &'static str,
    /// Every layer, in the order the status names them.
    pub layers: Vec<Layer>,
    /// Always `true`: no per-connection network rule exists without an
    /// administrator (see docs/decisions.md).
    pub network: bool,
    pub warnings: Vec<String>,
}

impl WindowsStatus {
    /// The layers that applied, as their status lines.
    pub fn applied(&self) -> Vec<String> {
        self.layers
            .iter()
            .filter(|l| l.applied)
            .map(Layer::line)
            .collect()
    }
}

/// The status of a connection planned as `plan` once `applied` is known.
pub fn status(plan: &JobPlan, applied: &Applied) -> WindowsStatus {
    use LayerName as L;
    let mut layers = Vec::new();
    let mut warnings = Vec::new();
    fn layer(
        out: (&mut Vec<Layer>, &mut Vec<String>),
        name: LayerName,
        ok: bool,
        what: String,
        missing: String,
    ) {
        if !ok {
            out.1.push(missing.clone());
        }
        out.0.push(Layer::either(name, ok, what, missing));
    }
    layer(
        (&mut layers, &mut warnings),
        L::JobObject,
        applied.in_job && applied.kill_on_job_close,
        "every descendant ends with the connection".to_string(),
        "the server is not in a Job Object that ends with the connection: its descendants may outlive it".to_string(),
    );
    layer(
        (&mut layers, &mut warnings),
        L::ProcessCeiling,
        applied.active_processes,
        format!("at most {} processes", plan.active_processes),
        format!(
            "the ceiling of {} processes was not applied",
            plan.active_processes
        ),
    );
    layer(
        (&mut layers, &mut warnings),
        L::MemoryCeiling,
        applied.job_memory,
        format!("job memory {}", size_text(plan.job_memory_bytes)),
        format!(
            "the job memory ceiling ({}) was not applied by the system",
            size_text(plan.job_memory_bytes)
        ),
    );
    layer(
        (&mut layers, &mut warnings),
        L::CpuBudget,
        applied.cpu_time,
        format!(
            "job CPU time {}",
            millis_text(plan.cpu_time.as_millis() as u64)
        ),
        format!(
            "the CPU-time budget ({}) was not applied by the system",
            millis_text(plan.cpu_time.as_millis() as u64)
        ),
    );
    match plan.cpu_rate {
        Some(rate) => layer(
            (&mut layers, &mut warnings),
            L::CpuRate,
            applied.cpu_rate,
            format!("capped at {}.{:02} %", rate / 100, rate % 100),
            "the CPU rate cap was not applied by the system: a busy server can take every core"
                .to_string(),
        ),
        None => layers.push(Layer::not_applied(
            L::CpuRate,
            "one logical processor: a cap would starve the server",
        )),
    }
    if plan.priority != Priority::Normal {
        layer(
        (&mut layers, &mut warnings),
            L::Priority,
            applied.priority,
            format!("{:?} class", plan.priority).to_lowercase(),
            "the lower priority class was not applied: the server competes with the desktop at full weight".to_string(),
        );
    } else {
        layers.push(Layer::not_applied(
            L::Priority,
            "the profile asks for the host's priority (nice 0)",
        ));
    }
    match &plan.token {
        Some(_) => {
            layer(
                (&mut layers, &mut warnings),
                L::RestrictedToken,
                applied.restricted_token,
                "write-restricted, administrators deny-only, no privileges; reads not confined"
                    .to_string(),
                "the restricted token was not applied: the server runs with this user's full token"
                    .to_string(),
            );
            layer(
                (&mut layers, &mut warnings),
                L::WriteGrants,
                applied.restricted_token && applied.write_grants,
                "writes only in scratch and the read-write paths".to_string(),
                "writes are not confined to scratch".to_string(),
            );
            warnings.push(
                "reads are not confined: a write-restricted token limits writes only".to_string(),
            );
        }
        None => {
            let why = "sandbox backend none: the server runs with this user's token and can write anything this user can";
            warnings.push(why.to_string());
            layers.push(Layer::not_applied(L::RestrictedToken, why));
            layers.push(Layer::not_applied(L::WriteGrants, why));
        }
    }
    if applied.limits_unconfirmed {
        warnings.push(
            "the system accepted the job's limits but does not report them back: they may not be enforced (Wine does not enforce them)".to_string(),
        );
    }
    layer(
        (&mut layers, &mut warnings),
        L::HandleList,
        applied.handle_list,
        "only its three pipes".to_string(),
        "the inherited handles were not limited to the three pipes".to_string(),
    );
    if plan.ui_limits {
        layer(
            (&mut layers, &mut warnings),
            L::UiLimits,
            applied.ui_limits,
            "no clipboard, no other process's windows, atoms, desktops or settings; input sent to the desktop (SendInput) is not confined".to_string(),
            "the job's UI limits were not applied: the server can use the clipboard and other processes' windows".to_string(),
        );
    } else {
        layers.push(Layer::not_applied(
            L::UiLimits,
            "sandbox backend none: the server can use the clipboard and other processes' windows",
        ));
    }
    let network = "Windows has no per-connection network rule without an administrator";
    layers.push(Layer::not_applied(L::Network, network));
    warnings.push(format!("network open: {network}"));
    layers.push(Layer::not_applied(
        L::UnixSockets,
        "nothing on Windows refuses a process's UNIX sockets",
    ));
    layers.push(Layer::not_applied(
        L::OpenFiles,
        "Windows has no per-process handle ceiling",
    ));
    layers.push(Layer::applied(
        L::ScratchQuota,
        format!("{}, watched", size_text(plan.scratch_quota_bytes)),
    ));
    WindowsStatus {
        backend: if plan.token.is_some() {
            "job_object+restricted_token"
        } else {
            "job_object"
        },
        layers,
        network: true,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Windows default, whatever system the test runs on.
    fn job_object() -> Profile {
        Profile {
            backend: Backend::JobObject,
            ..Profile::default()
        }
    }

    fn scratch() -> PathBuf {
        PathBuf::from(r"C:\Users\a\AppData\Local\Gatehouse\scratch\c-1-2-3")
    }

    #[test]
    fn the_default_profile_asks_for_every_layer_with_the_default_ceilings() {
        let p = plan(&job_object(), scratch(), None, 8).unwrap();
        assert!(p.kill_on_job_close);
        assert!(p.die_on_unhandled_exception);
        assert_eq!(p.active_processes, 256);
        assert_eq!(p.job_memory_bytes, 1 << 30);
        assert_eq!(p.cpu_time, Duration::from_secs(600));
        // Seven of eight cores, in hundredths of a percent.
        assert_eq!(p.cpu_rate, Some(8750));
        assert_eq!(p.priority, Priority::BelowNormal);
        assert!(p.ui_limits, "no clipboard or other windows by default");
        let token = p.token.expect("a restricted token by default");
        assert!(token.write_restricted && token.disable_max_privilege && token.lua_token);
        assert_eq!(token.disabled_sids, DANGEROUS_SIDS.to_vec());
        assert_eq!(token.writable, vec![scratch()]);
    }

    #[test]
    fn the_profile_and_the_connection_set_the_limits() {
        let profile = Profile {
            max_processes: Some(4),
            max_memory_bytes: Some(64 << 20),
            nice: Some(0),
            read_write: vec![PathBuf::from(r"D:\data")],
            ..job_object()
        };
        let p = plan(&profile, scratch(), Some(Duration::from_secs(5)), 1).unwrap();
        assert_eq!(p.active_processes, 4);
        assert_eq!(p.job_memory_bytes, 64 << 20);
        assert_eq!(p.cpu_time, Duration::from_secs(5));
        assert_eq!(p.cpu_rate, None, "one core: no cap");
        assert_eq!(p.priority, Priority::Normal);
        assert_eq!(
            p.token.unwrap().writable,
            vec![scratch(), PathBuf::from(r"D:\data")]
        );
        assert_eq!(Priority::from_nice(19), Priority::Idle);
    }

    #[test]
    fn the_none_backend_keeps_the_job_and_drops_the_token() {
        let profile = Profile {
            backend: Backend::None,
            ..Profile::default()
        };
        let p = plan(&profile, scratch(), None, 2).unwrap();
        assert!(p.token.is_none());
        assert!(!p.ui_limits);
        assert!(p.kill_on_job_close);
        let s = status(&p, &all_applied());
        assert_eq!(s.backend, "job_object");
        assert!(s.warnings.iter().any(|w| w.contains("backend none")));
    }

    #[test]
    fn options_windows_cannot_honour_are_refused_not_dropped() {
        for profile in [
            Profile {
                backend: Backend::Bwrap,
                ..Profile::default()
            },
            Profile {
                backend: Backend::Landlock,
                ..Profile::default()
            },
            Profile {
                backend: Backend::Seatbelt,
                ..Profile::default()
            },
            Profile {
                connect_ports: vec![443],
                ..job_object()
            },
            Profile {
                max_open_files: Some(64),
                ..job_object()
            },
        ] {
            let e = plan(&profile, scratch(), None, 4).expect_err(&format!("{profile:?}"));
            assert_eq!(e.code, codes::SANDBOX_PROFILE_INVALID);
            assert!(e.hint.is_some());
        }
    }

    fn all_applied() -> Applied {
        Applied {
            in_job: true,
            kill_on_job_close: true,
            active_processes: true,
            job_memory: true,
            cpu_time: true,
            cpu_rate: true,
            priority: true,
            ui_limits: true,
            restricted_token: true,
            write_grants: true,
            handle_list: true,
            limits_unconfirmed: false,
        }
    }

    #[test]
    fn the_status_names_what_applied_and_only_that() {
        let p = plan(&job_object(), scratch(), None, 4).unwrap();
        let full = status(&p, &all_applied());
        assert_eq!(full.backend, "job_object+restricted_token");
        assert!(full.network, "network is always reported open");
        let lines = full.applied();
        assert!(
            lines
                .iter()
                .any(|l| l == "memory ceiling: applied (job memory 1 GiB)"),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l == "CPU rate: applied (capped at 75.00 %)"),
            "{lines:?}"
        );
        // The job kept the child off the clipboard and other windows (it
        // had set none: a server could type into the user's terminal).
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("UI limits: applied (no clipboard")),
            "{lines:?}"
        );
        assert_eq!(
            full.layers
                .iter()
                .find(|l| l.layer == LayerName::Network)
                .unwrap()
                .line(),
            "network: not applied: Windows has no per-connection network rule without an administrator"
        );
        assert_eq!(
            full.warnings,
            vec![
                "reads are not confined: a write-restricted token limits writes only".to_string(),
                "network open: Windows has no per-connection network rule without an administrator"
                    .to_string(),
            ]
        );
        // What the system refused moves from the layers to the warnings.
        let partial = status(
            &p,
            &Applied {
                job_memory: false,
                cpu_rate: false,
                restricted_token: false,
                ui_limits: false,
                ..all_applied()
            },
        );
        let lines = partial.applied();
        assert!(!lines.iter().any(|l| l.starts_with("memory ceiling")));
        assert!(!lines.iter().any(|l| l.starts_with("restricted token")));
        assert!(!lines.iter().any(|l| l.starts_with("write grants")));
        let memory = partial
            .layers
            .iter()
            .find(|l| l.layer == LayerName::MemoryCeiling)
            .unwrap();
        assert_eq!(
            memory.line(),
            "memory ceiling: not applied: the job memory ceiling (1 GiB) was not applied by the system"
        );
        for needle in [
            "job memory ceiling (1 GiB) was not applied",
            "CPU rate cap was not applied",
            "restricted token was not applied",
            "writes are not confined",
            "UI limits were not applied",
        ] {
            assert!(
                partial.warnings.iter().any(|w| w.contains(needle)),
                "{needle}: {:?}",
                partial.warnings
            );
        }
        let nothing = status(&p, &Applied::default());
        assert!(
            nothing
                .layers
                .iter()
                .all(|l| !l.applied || l.layer == LayerName::ScratchQuota),
            "{:?}",
            nothing.layers
        );
        // Accepted but not reported back: listed, and said to be unconfirmed.
        let unconfirmed = status(
            &p,
            &Applied {
                limits_unconfirmed: true,
                ..all_applied()
            },
        );
        assert!(
            unconfirmed
                .applied()
                .iter()
                .any(|l| l.starts_with("memory ceiling"))
        );
        assert!(
            unconfirmed
                .warnings
                .iter()
                .any(|w| w.contains("does not report them back"))
        );
    }
}
