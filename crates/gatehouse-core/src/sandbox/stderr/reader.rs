//! The thread that reads every child's stderr, below the host's priority.
//!
//! Ten servers flooding stderr make the host read and split hundreds of MiB;
//! on the host's own runtime that work competed with everything the host does
//! for its user (in the desktop app, answering the window). Here it runs on
//! one current-thread runtime of its own, on a thread at niceness
//! [`READER_NICE`] (Linux sets niceness per thread): a flood is drained a
//! little later rather than the window painted later. The reader never waits
//! on a subscriber, so one thread serves every child.

use std::future::Future;
use std::sync::OnceLock;

use tokio::process::ChildStderr;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::{StderrTail, drain};
use crate::sandbox::profile::DEFAULT_NICE;

/// Niceness of the reader thread: the children's own.
pub const READER_NICE: u8 = DEFAULT_NICE;

/// Overrides [`READER_NICE`], for the desktop bench's side-by-side runs.
pub const ENV_READER_NICE: &str = "GATEHOUSE_STDERR_READER_NICE";

fn runtime() -> &'static Handle {
    static READER: OnceLock<Handle> = OnceLock::new();
    READER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .expect("the stderr reader's runtime starts");
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("gatehouse-stderr".into())
            .spawn(move || {
                let wanted = std::env::var(ENV_READER_NICE)
                    .ok()
                    .and_then(|v| v.parse::<u8>().ok())
                    .unwrap_or(READER_NICE);
                if let Err(e) = crate::sandbox::os::lower_thread_priority(wanted) {
                    tracing::debug!(error = %e, "the stderr reader keeps the host's priority");
                }
                runtime.block_on(std::future::pending::<()>());
            })
            .expect("the stderr reader thread starts");
        handle
    })
}

/// Runs `task` on the reader thread.
pub fn spawn<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(task)
}

/// Drains a child's stderr into `tail` (see [`drain`]); call it on the reader
/// thread ([`spawn`]): the pipe is registered with the runtime it runs on.
pub async fn drain_child(stderr: ChildStderr, tail: &StderrTail) -> std::io::Result<u64> {
    #[cfg(unix)]
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(stderr.into_owned_fd()?)?;
    #[cfg(not(unix))]
    let pipe = stderr;
    drain(pipe, tail).await
}
