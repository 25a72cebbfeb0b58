//! The running child as the shared code sees it: the same surface as
//! `tokio::process::Child` (`id`, `wait`, `try_wait`, the three pipes as
//! tokio's types), over a process this backend created itself (tokio's
//! `Command` cannot take a restricted token or a handle list).
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::os::windows::process::ExitStatusExt;
use std::process::ExitStatus;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;
use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, INFINITE, WaitForSingleObject};

use super::process::Started;

#[derive(Debug)]
pub(crate) struct Child {
    pid: u32,
    process: OwnedHandle,
    exit: watch::Receiver<Option<u32>>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// The exit code, once the process has ended (waiting on its handle, not
/// trusting `STILL_ACTIVE`: a process may exit with 259 itself).
fn exit_code(process: &OwnedHandle, timeout_ms: u32) -> Option<u32> {
    let h = process.as_raw_handle() as HANDLE;
    // SAFETY: a valid process handle.
    if unsafe { WaitForSingleObject(h, timeout_ms) } != WAIT_OBJECT_0 {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: a valid process handle and a writable u32.
    let ok = unsafe { GetExitCodeProcess(h, &mut code) } != 0;
    ok.then_some(code)
}

impl Child {
    /// Wraps a started child: its pipes become tokio's (reads and writes on
    /// tokio's blocking pool: anonymous pipes have no overlapped I/O), and a
    /// thread waits for its exit.
    pub fn new(started: Started) -> io::Result<Child> {
        let Started {
            process,
            pid,
            stdin,
            stdout,
            stderr,
            ..
        } = started;
        let (tx, rx) = watch::channel(None);
        let waited = process.try_clone()?;
        std::thread::Builder::new()
            .name(format!("gatehouse-wait-{pid}"))
            .spawn(move || {
                if let Some(code) = exit_code(&waited, INFINITE) {
                    let _ = tx.send(Some(code));
                }
            })?;
        Ok(Child {
            pid,
            process,
            exit: rx,
            stdin: Some(ChildStdin::from_std(std::process::ChildStdin::from(stdin))?),
            stdout: Some(ChildStdout::from_std(std::process::ChildStdout::from(
                stdout,
            ))?),
            stderr: Some(ChildStderr::from_std(std::process::ChildStderr::from(
                stderr,
            ))?),
        })
    }

    pub fn id(&self) -> Option<u32> {
        Some(self.pid)
    }

    /// Waits for the exit (cancel-safe: the waiting thread keeps going).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let code = *self
            .exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| io::Error::other("the thread waiting for the child is gone"))?;
        Ok(ExitStatus::from_raw(code.unwrap_or(0)))
    }

    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        Ok(exit_code(&self.process, 0).map(ExitStatus::from_raw))
    }
}
