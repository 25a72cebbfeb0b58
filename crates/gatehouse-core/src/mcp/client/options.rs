//! What a connection and a call can be told: limits, connect options, call options.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::lifecycle::CallRecorder;
use crate::sandbox::stderr::{StderrBudget, TailLimits};
use crate::sandbox::{ChildSpec, Grace, Profile, ScratchRoot};

/// Limits of one connection. Defaults suit an interactive admin tool.
#[derive(Debug, Clone)]
pub struct ClientLimits {
    /// Calls on the wire at once; more wait for a slot.
    pub max_in_flight: usize,
    /// Longest stdout line accepted.
    pub max_frame: usize,
    /// How long `server/discover` may stay unanswered before the server is
    /// taken for legacy.
    pub probe_timeout: Duration,
    /// Deadline of each negotiation step and of `tools/list`.
    pub setup_timeout: Duration,
    /// Default total deadline of a call (progress never extends it).
    pub call_timeout: Duration,
    /// Default inactivity timeout of a call (progress resets it).
    pub inactivity_timeout: Option<Duration>,
    /// Resident memory ceiling of the whole process group.
    pub max_rss_bytes: Option<u64>,
    /// CPU time ceiling of the whole process group.
    pub max_cpu: Option<Duration>,
    /// `max_rss_bytes` and `max_cpu` are the site's defaults, not the
    /// connection's own (the status says so).
    pub ceilings_site_default: (bool, bool),
    pub watchdog_interval: Duration,
    pub grace: Grace,
    pub stderr: TailLimits,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            max_in_flight: 16,
            max_frame: 8 * 1024 * 1024,
            probe_timeout: Duration::from_secs(5),
            setup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(30),
            inactivity_timeout: None,
            max_rss_bytes: None,
            max_cpu: None,
            ceilings_site_default: (false, false),
            watchdog_interval: Duration::from_millis(200),
            grace: Grace::default(),
            stderr: TailLimits::default(),
        }
    }
}

/// Everything `connect` needs.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The stored connection's name, if any (goes into records).
    pub name: Option<String>,
    pub spec: ChildSpec,
    pub limits: ClientLimits,
    pub scratch_root: ScratchRoot,
    /// How the child is confined; its memory ceiling defaults to `limits.max_rss_bytes`.
    pub profile: Profile,
    pub recorder: Arc<dyn CallRecorder>,
    pub stderr_pool: Arc<StderrBudget>,
}

impl ConnectOptions {
    pub fn new(
        spec: ChildSpec,
        scratch_root: ScratchRoot,
        recorder: Arc<dyn CallRecorder>,
    ) -> Self {
        Self {
            name: None,
            spec,
            limits: ClientLimits::default(),
            scratch_root,
            profile: Profile::default(),
            recorder,
            stderr_pool: StderrBudget::process(),
        }
    }
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Total deadline; the connection's default when `None`.
    pub timeout: Option<Duration>,
    /// Inactivity timeout; the connection's default when `None`.
    pub inactivity: Option<Duration>,
    /// Cancels the call from elsewhere (a UI button, Ctrl-C).
    pub cancel: Option<CancellationToken>,
}
