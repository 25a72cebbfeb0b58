//! The what-applied report: how a child of a profile is confined on this
//! system ([`Isolation`]), which `probe`, `connections show`, the live
//! connection's status and the desktop's Isolation row all read. Each
//! backend derives it from what it applies ([`describe`]); nothing here
//! guesses. Its [`Layer`] list names every layer of this system, applied or
//! not, and why not.

use serde::Serialize;

use super::profile::Profile;

/// How a child is confined, as reported by `probe` and the connection status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Isolation {
    pub backend: &'static str,
    /// Landlock ABI applied (0: not applied).
    pub landlock_abi: u8,
    /// Everything but scratch and the profile's read-write paths is mounted
    /// read-only for the server, and scratch is a tmpfs of the quota's size
    /// (Landlock backend, where user namespaces are allowed); bwrap's own
    /// mounts do the same for the first.
    pub read_only_view: bool,
    pub network: bool,
    /// With `network` off, the TCP ports it may still connect to (always
    /// present, empty or not: the page reads it as an array).
    pub connect_ports: Vec<u16>,
    pub scratch_quota_bytes: u64,
    /// Whether the server may open UNIX sockets (named ones included).
    pub unix_sockets: bool,
    /// Scheduling niceness the server runs at (0: as the host).
    pub nice: u8,
    /// Every layer this system's backend has, in the order the status names
    /// them: applied (with what it holds) or not (with why not).
    pub layers: Vec<Layer>,
    /// What is weaker than asked, said once per connection.
    pub warnings: Vec<String>,
}

/// One confinement layer. The set is the union of every system's; a
/// backend lists the ones it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum LayerName {
    /// Linux: Landlock's file-system rules.
    LandlockFs,
    /// Linux: Landlock's signal and abstract-socket scoping (ABI ≥ 6).
    SignalScope,
    /// Linux: the socket filter (UDP, UNIX sockets, io_uring).
    Seccomp,
    /// Linux: everything but scratch mounted read-only, scratch a tmpfs.
    ReadOnlyView,
    /// Linux: the bwrap namespaces (mounts, PID, network).
    Bwrap,
    /// Linux: `no_new_privs` and every capability dropped.
    NoNewPrivs,
    /// macOS: the Seatbelt profile under `sandbox-exec`.
    Seatbelt,
    /// Windows: the Job Object every descendant dies with.
    JobObject,
    /// Windows: the restricted token (write-restricted, deny-only groups).
    RestrictedToken,
    /// Windows: write access granted on scratch (and the read-write paths) only.
    WriteGrants,
    /// Windows: only the three pipes inherited.
    HandleList,
    /// Windows: the job's CPU rate cap.
    CpuRate,
    /// Windows: the job's user-interface limits (clipboard, other
    /// processes' windows, global atoms, desktops, system settings).
    UiLimits,
    /// Whether the server's network is refused (all of it, or all but ports).
    Network,
    /// Whether named UNIX sockets are refused.
    UnixSockets,
    /// The memory ceiling (the kernel's and the watchdog's).
    MemoryCeiling,
    /// The CPU-time budget.
    CpuBudget,
    /// The process ceiling.
    ProcessCeiling,
    /// The open-file ceiling.
    OpenFiles,
    /// The scratch quota.
    ScratchQuota,
    /// The lowered scheduling priority.
    Priority,
}

impl LayerName {
    /// The name a status line gives the layer.
    pub fn label(self) -> &'static str {
        match self {
            LayerName::LandlockFs => "Landlock fs",
            LayerName::SignalScope => "signal scope",
            LayerName::Seccomp => "seccomp",
            LayerName::ReadOnlyView => "read-only view",
            LayerName::Bwrap => "bwrap",
            LayerName::NoNewPrivs => "no_new_privs",
            LayerName::Seatbelt => "Seatbelt",
            LayerName::JobObject => "Job Object",
            LayerName::RestrictedToken => "restricted token",
            LayerName::WriteGrants => "write grants",
            LayerName::HandleList => "inherited handles",
            LayerName::CpuRate => "CPU rate",
            LayerName::UiLimits => "UI limits",
            LayerName::Network => "network",
            LayerName::UnixSockets => "UNIX sockets",
            LayerName::MemoryCeiling => "memory ceiling",
            LayerName::CpuBudget => "CPU budget",
            LayerName::ProcessCeiling => "process ceiling",
            LayerName::OpenFiles => "open files",
            LayerName::ScratchQuota => "scratch quota",
            LayerName::Priority => "priority",
        }
    }
}

/// One layer as applied on this system, or not and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Layer {
    pub layer: LayerName,
    pub applied: bool,
    /// Applied: what it holds here ("ABI 7", "1 GiB (site default)").
    /// Not applied: why not, never empty.
    pub detail: String,
}

impl Layer {
    pub fn applied(layer: LayerName, detail: impl Into<String>) -> Layer {
        Layer {
            layer,
            applied: true,
            detail: detail.into(),
        }
    }

    pub fn not_applied(layer: LayerName, reason: impl Into<String>) -> Layer {
        Layer {
            layer,
            applied: false,
            detail: reason.into(),
        }
    }

    /// `applied` when `ok`, else not applied for `reason`.
    pub fn either(
        layer: LayerName,
        ok: bool,
        detail: impl Into<String>,
        reason: impl Into<String>,
    ) -> Layer {
        if ok {
            Layer::applied(layer, detail)
        } else {
            Layer::not_applied(layer, reason)
        }
    }

    /// The status line: `Landlock fs: applied (ABI 7)`, `network: not
    /// applied: the profile allows it (--network)`.
    pub fn line(&self) -> String {
        match (self.applied, self.detail.is_empty()) {
            (true, true) => format!("{}: applied", self.layer.label()),
            (true, false) => format!("{}: applied ({})", self.layer.label(), self.detail),
            (false, _) => format!("{}: not applied: {}", self.layer.label(), self.detail),
        }
    }
}

/// A ceiling the connection runs under, and whether it is the site's
/// default rather than the connection's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceiling {
    pub value: u64,
    pub site_default: bool,
}

impl Ceiling {
    fn origin(self) -> &'static str {
        if self.site_default {
            " (site default)"
        } else {
            ""
        }
    }
}

/// `bytes` in the largest whole binary unit (`1 GiB`, `512 MiB`).
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A CPU-time budget in the largest whole unit (`10 min`, `90 s`, `1500 ms`).
pub fn millis_text(ms: u64) -> String {
    match ms {
        ms if ms >= 60_000 && ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms >= 1000 && ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{ms} ms"),
    }
}

impl Isolation {
    /// The layer named `name`, if this backend has it.
    pub fn layer(&self, name: LayerName) -> Option<&Layer> {
        self.layers.iter().find(|l| l.layer == name)
    }

    /// One status line per layer.
    pub fn layer_lines(&self) -> Vec<String> {
        self.layers.iter().map(Layer::line).collect()
    }

    /// The connection's memory ceiling and CPU budget, held by the owner's
    /// watchdog on every system (resident memory and CPU time of the whole
    /// group): the layers say their values and whether they are the site's
    /// defaults, with what the backend's kernel part adds (RLIMIT_DATA, the
    /// job's limits) kept after them.
    pub fn with_ceilings(mut self, memory: Option<Ceiling>, cpu: Option<Ceiling>) -> Isolation {
        let merge = |layers: &mut Vec<Layer>, name: LayerName, watched: Option<String>| {
            let kernel = layers
                .iter()
                .position(|l| l.layer == name)
                .map(|i| layers.remove(i))
                .filter(|l| l.applied);
            let layer = match (watched, kernel) {
                (Some(w), Some(k)) => Layer::applied(name, format!("{w}; {}", k.detail)),
                (Some(w), None) => Layer::applied(name, w),
                (None, Some(k)) => k,
                (None, None) => Layer::not_applied(name, "the connection sets none"),
            };
            layers.push(layer);
        };
        merge(
            &mut self.layers,
            LayerName::MemoryCeiling,
            memory.map(|m| {
                format!(
                    "{}{}, resident memory of the group watched",
                    size_text(m.value),
                    m.origin()
                )
            }),
        );
        merge(
            &mut self.layers,
            LayerName::CpuBudget,
            cpu.map(|c| {
                format!(
                    "{}{}, CPU time of the group watched",
                    millis_text(c.value),
                    c.origin()
                )
            }),
        );
        self
    }
}

/// How a child of `profile` will be confined on this system, with what is
/// weaker than asked said in `warnings` (once per connection: in `probe`, in
/// the live connection's status and in `connections show`).
pub fn describe(profile: &Profile) -> Isolation {
    super::os::describe(profile)
}

/// The layers every backend of every system reports alike from the profile:
/// the network and UNIX-socket refusals are the backend's own.
pub(crate) fn common_layers(profile: &Profile, process_ceiling: Layer) -> Vec<Layer> {
    let mut out = vec![process_ceiling];
    out.push(Layer::applied(
        LayerName::ScratchQuota,
        format!("{}, watched", size_text(profile.scratch_quota())),
    ));
    out.push(Layer::either(
        LayerName::Priority,
        profile.nice() > 0,
        format!("nice {}", profile.nice()),
        "the profile asks for the host's priority (nice 0)",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Isolation {
        Isolation {
            backend: "test",
            landlock_abi: 0,
            read_only_view: false,
            network: true,
            connect_ports: Vec::new(),
            scratch_quota_bytes: 1 << 20,
            unix_sockets: true,
            nice: 0,
            layers: vec![Layer::applied(
                LayerName::MemoryCeiling,
                "RLIMIT_DATA 1 GiB",
            )],
            warnings: Vec::new(),
        }
    }

    /// The site's default ceiling says so; the kernel's part stays named;
    /// no ceiling at all is said, not left out.
    #[test]
    fn ceilings_say_their_value_and_whether_the_site_set_it() {
        let iso = base().with_ceilings(
            Some(Ceiling {
                value: 1 << 30,
                site_default: true,
            }),
            Some(Ceiling {
                value: 600_000,
                site_default: false,
            }),
        );
        assert_eq!(
            iso.layer(LayerName::MemoryCeiling).unwrap().line(),
            "memory ceiling: applied (1 GiB (site default), resident memory of the group watched; RLIMIT_DATA 1 GiB)"
        );
        assert_eq!(
            iso.layer(LayerName::CpuBudget).unwrap().line(),
            "CPU budget: applied (10 min, CPU time of the group watched)"
        );
        let none = base().with_ceilings(None, None);
        assert!(none.layer(LayerName::MemoryCeiling).unwrap().applied);
        let cpu = none.layer(LayerName::CpuBudget).unwrap();
        assert_eq!(
            cpu.line(),
            "CPU budget: not applied: the connection sets none"
        );
    }

    #[test]
    fn sizes_and_times_use_the_largest_whole_unit() {
        assert_eq!(size_text(1 << 30), "1 GiB");
        assert_eq!(size_text(1536 << 20), "1536 MiB");
        assert_eq!(size_text(1000), "1000 bytes");
        assert_eq!(millis_text(90_000), "90 s");
        assert_eq!(millis_text(1500), "1500 ms");
    }
}
