//! Commands that run a connection's server in this process (`call`,
//! `probe`) end it when they are interrupted.

use gatehouse_core::Result;
use gatehouse_core::error::{Error, codes};
use gatehouse_core::mcp::server::shutdown::{Reason, signal_or_orphaned};

/// Runs `work` until it ends, or until SIGINT, SIGTERM, SIGHUP or the
/// parent's end: then `work` is dropped, and with it the server and every
/// process it started (the sandbox's teardown). Without this a Ctrl-C, a
/// closed terminal or `timeout` had killed the host at once and left the
/// server and its daemons running under init with no ceiling.
pub async fn until_interrupted<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    let stop = signal_or_orphaned();
    tokio::select! {
        done = work => done,
        reason = stop => {
            let why = match reason {
                Reason::Signal(name) => name,
                Reason::ParentExited | Reason::EndOfInput => "the end of the process that started it",
            };
            Err(Error::new(
                codes::CALL_CANCELLED,
                format!("interrupted by {why}: the server and everything it started were stopped"),
            ))
        }
    }
}
