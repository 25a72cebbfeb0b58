//! The Windows side of [`ProcId`] (PID + creation time) and
//! [`ProcessGroup`]: a connection's "group" is its Job Object, found by the
//! leader's PID in a registry the backend keeps while the child lives.
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::sync::{Arc, Mutex, OnceLock};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Threading::{
    OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE,
    TerminateProcess, WaitForSingleObject,
};

use super::job::{self, Job};
use crate::error::Result;
use crate::sandbox::process::{GroupUsage, ProcId, ProcessGroup, Stop};

/// The exit code of processes ended by Gatehouse (the job, or one process).
pub const KILLED_EXIT_CODE: u32 = 1;

fn jobs() -> &'static Mutex<HashMap<i32, Arc<Job>>> {
    static JOBS: OnceLock<Mutex<HashMap<i32, Arc<Job>>>> = OnceLock::new();
    JOBS.get_or_init(Mutex::default)
}

pub(super) fn register(pid: i32, job: Arc<Job>) {
    jobs()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(pid, job);
}

pub(super) fn unregister(pid: i32) {
    jobs()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&pid);
}

fn job_of(pgid: i32) -> Option<Arc<Job>> {
    jobs()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&pgid)
        .cloned()
}

fn open(pid: i32, access: u32) -> Option<OwnedHandle> {
    let pid = u32::try_from(pid).ok()?;
    // SAFETY: plain values; the result is checked before it is owned.
    let h = unsafe { OpenProcess(access, 0, pid) };
    // SAFETY: a fresh handle nothing else owns.
    (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h as RawHandle) })
}

/// Whether the process behind `h` is still running.
fn running(h: &OwnedHandle) -> bool {
    // SAFETY: a valid handle opened with SYNCHRONIZE; a zero timeout.
    unsafe { WaitForSingleObject(h.as_raw_handle() as HANDLE, 0) != 0 }
}

impl ProcId {
    /// The process as it is now, if it exists.
    pub fn of(pid: i32) -> Option<ProcId> {
        let h = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
        Some(ProcId {
            pid,
            start: job::creation_time(&h)?,
        })
    }

    /// Whether this very process (not a recycled PID) still exists.
    pub fn exists(&self) -> bool {
        ProcId::of(self.pid).is_some_and(|p| p.start == self.start)
    }

    /// Whether this very process is running (an ended process whose handle
    /// someone still holds exists, but does not run).
    pub fn is_live(&self) -> bool {
        let Some(h) = open(
            self.pid,
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
        ) else {
            return false;
        };
        job::creation_time(&h) == Some(self.start) && running(&h)
    }

    /// Ends the process only if it is still the one recorded (the check and
    /// the kill go through one handle, so a recycled PID is never hit).
    pub fn kill_if_same(&self) -> bool {
        let Some(h) = open(
            self.pid,
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE | PROCESS_TERMINATE,
        ) else {
            return false;
        };
        if job::creation_time(&h) != Some(self.start) || !running(&h) {
            return false;
        }
        // SAFETY: a valid handle opened with PROCESS_TERMINATE.
        unsafe { TerminateProcess(h.as_raw_handle() as HANDLE, KILLED_EXIT_CODE) != 0 }
    }
}

impl ProcessGroup {
    /// `Stop::Kill` ends every process of the job; `Stop::Term` sends
    /// nothing (`Ok(false)`): a process without a console has no polite
    /// request on Windows, closing its stdin is the one it gets.
    pub fn signal(&self, stop: Stop) -> Result<bool> {
        let Some(job) = job_of(self.pgid) else {
            return Ok(false);
        };
        match stop {
            Stop::Term => Ok(false),
            Stop::Kill => {
                Ok(job.counters().active_processes > 0 && job.terminate(KILLED_EXIT_CODE))
            }
        }
    }

    /// The PIDs of the job's processes still running.
    pub fn members(&self) -> Vec<i32> {
        job_of(self.pgid)
            .map(|j| j.pids().into_iter().map(|p| p as i32).collect())
            .unwrap_or_default()
    }

    /// The same as [`Self::members`]: the job lists running processes only.
    pub fn live_members(&self) -> Vec<i32> {
        self.members()
    }

    pub fn usage(&self) -> GroupUsage {
        self.usage_with(&[])
    }

    /// Memory (working sets) of the job's processes and its CPU time,
    /// ended processes included (or, where the system keeps no job
    /// accounting, the live processes' own times); nothing leaves a job, so
    /// `tracked` adds nothing.
    pub fn usage_with(&self, _tracked: &[ProcId]) -> GroupUsage {
        let Some(job) = job_of(self.pgid) else {
            return GroupUsage::default();
        };
        let pids = job.pids();
        GroupUsage {
            members: pids.len(),
            rss_bytes: pids
                .iter()
                .filter_map(|p| job::process_facts(*p))
                .map(|(_, ws)| ws)
                .sum(),
            cpu_ms: job
                .counters()
                .cpu_ms
                .max(pids.iter().map(|p| job::process_cpu_ms(*p)).sum()),
        }
    }

    /// Nothing to reap on Windows: an ended process leaves no zombie.
    pub fn reap_children(&self) -> usize {
        0
    }
}
