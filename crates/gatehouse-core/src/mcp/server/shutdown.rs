//! When to stop besides end of input: SIGTERM or SIGINT, or the parent dying.
//!
//! Parent death is noticed by polling `getppid()`: when the parent exits the
//! process is re-parented (to init or a subreaper) and the id changes.
//! `PR_SET_PDEATHSIG` was considered and not used: it fires when the *thread*
//! that spawned us exits, which kills servers launched from a short-lived
//! worker thread of a healthy client, and it is Linux-only.

#[cfg(unix)]
use std::time::Duration;

#[cfg(unix)]
use nix::unistd::getppid;
#[cfg(unix)]
use tokio::signal::unix::{SignalKind, signal};

#[cfg(unix)]
const PARENT_POLL: Duration = Duration::from_millis(500);

/// Why the server is stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    EndOfInput,
    Signal(&'static str),
    ParentExited,
}

/// Resolves when a signal arrives or the parent process is gone.
///
/// The handlers are installed here, when called, not when the future is first
/// polled: a SIGTERM that arrives after the first answer was sent must never
/// meet the default action (death by signal instead of a clean exit).
#[cfg(unix)]
pub fn signal_or_orphaned() -> impl Future<Output = Reason> {
    let parent = getppid();
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async move {
        let mut tick = tokio::time::interval(PARENT_POLL);
        loop {
            tokio::select! {
                Some(()) = recv(&mut term) => return Reason::Signal("SIGTERM"),
                Some(()) = recv(&mut int) => return Reason::Signal("SIGINT"),
                Some(()) = recv(&mut hup) => return Reason::Signal("SIGHUP"),
                _ = tick.tick() => {
                    if getppid() != parent {
                        return Reason::ParentExited;
                    }
                }
            }
        }
    }
}

/// Windows: Ctrl+C or Ctrl+Break (no parent poll: a Windows client's end
/// closes our stdin, which ends the server as end of input).
#[cfg(windows)]
pub fn signal_or_orphaned() -> impl Future<Output = Reason> {
    let mut ctrl_c = tokio::signal::windows::ctrl_c().ok();
    let mut ctrl_break = tokio::signal::windows::ctrl_break().ok();
    async move {
        let c = async {
            match ctrl_c.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let b = async {
            match ctrl_break.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = c => Reason::Signal("CTRL_C"),
            _ = b => Reason::Signal("CTRL_BREAK"),
        }
    }
}

#[cfg(unix)]
async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match s {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
