//! The connection's Job Object: created with the plan's limits before the
//! child runs, the child assigned while still suspended, every process of it
//! measured, listed and ended through the job.
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob, JOB_OBJECT_CPU_RATE_CONTROL_ENABLE,
    JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP, JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
    JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION, JOB_OBJECT_LIMIT_JOB_MEMORY,
    JOB_OBJECT_LIMIT_JOB_TIME, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOB_OBJECT_LIMIT_PRIORITY_CLASS,
    JOB_OBJECT_UILIMIT_DESKTOP, JOB_OBJECT_UILIMIT_DISPLAYSETTINGS, JOB_OBJECT_UILIMIT_EXITWINDOWS,
    JOB_OBJECT_UILIMIT_GLOBALATOMS, JOB_OBJECT_UILIMIT_HANDLES, JOB_OBJECT_UILIMIT_READCLIPBOARD,
    JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS, JOB_OBJECT_UILIMIT_WRITECLIPBOARD,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_BASIC_UI_RESTRICTIONS,
    JOBOBJECT_CPU_RATE_CONTROL_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectBasicProcessIdList, JobObjectBasicUIRestrictions,
    JobObjectCpuRateControlInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    BELOW_NORMAL_PRIORITY_CLASS, GetProcessTimes, IDLE_PRIORITY_CLASS, NORMAL_PRIORITY_CLASS,
    OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};

use super::plan::{Applied, JobPlan, Priority};

/// One Job Object, closed (and, with `KILL_ON_JOB_CLOSE`, every process of it
/// ended) when dropped.
#[derive(Debug)]
pub struct Job {
    handle: OwnedHandle,
}

/// The job's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounters {
    /// User + kernel time of every process the job has held, in ms.
    pub cpu_ms: u64,
    pub active_processes: u32,
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle() as HANDLE
}

impl Job {
    /// A new, anonymous job with the plan's limits. What the system refused
    /// is left `false` in `applied` (one refused limit does not stop the
    /// others); the job itself failing is an error.
    pub fn create(plan: &JobPlan, applied: &mut Applied) -> io::Result<Job> {
        // SAFETY: both pointers may be null (default security, no name); the
        // returned handle is checked before it is owned.
        let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if h.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `h` is a fresh, valid handle that nothing else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(h as RawHandle) };
        let job = Job { handle };
        let mut base = 0;
        if plan.kill_on_job_close {
            base |= JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        }
        if plan.die_on_unhandled_exception {
            base |= JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        }
        let mut info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        info.BasicLimitInformation.ActiveProcessLimit = plan.active_processes;
        // 100 ns units.
        info.BasicLimitInformation.PerJobUserTimeLimit =
            i64::try_from(plan.cpu_time.as_nanos() / 100).unwrap_or(i64::MAX);
        info.BasicLimitInformation.PriorityClass = match plan.priority {
            Priority::Normal => NORMAL_PRIORITY_CLASS,
            Priority::BelowNormal => BELOW_NORMAL_PRIORITY_CLASS,
            Priority::Idle => IDLE_PRIORITY_CLASS,
        };
        info.JobMemoryLimit = usize::try_from(plan.job_memory_bytes).unwrap_or(usize::MAX);
        // One limit at a time on top of those accepted so far: a system that
        // refuses one (Wine refuses most) keeps the others in force.
        let mut accepted = 0;
        for flag in [
            base,
            JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
            JOB_OBJECT_LIMIT_JOB_MEMORY,
            JOB_OBJECT_LIMIT_JOB_TIME,
            JOB_OBJECT_LIMIT_PRIORITY_CLASS,
        ] {
            info.BasicLimitInformation.LimitFlags = accepted | flag;
            if job.set(JobObjectExtendedLimitInformation, &info) {
                accepted |= flag;
            }
        }
        // What the system reports it kept. A system that answers the query
        // with none of them (Wine) does not report limits: what it accepted
        // stands, marked unconfirmed.
        let reported = job
            .extended_limits()
            .map_or(0, |i| i.BasicLimitInformation.LimitFlags);
        let kept = if reported & accepted == 0 && accepted != 0 {
            applied.limits_unconfirmed = true;
            accepted
        } else {
            reported & accepted
        };
        applied.kill_on_job_close = kept & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE != 0;
        applied.active_processes = kept & JOB_OBJECT_LIMIT_ACTIVE_PROCESS != 0;
        applied.job_memory = kept & JOB_OBJECT_LIMIT_JOB_MEMORY != 0;
        applied.cpu_time = kept & JOB_OBJECT_LIMIT_JOB_TIME != 0;
        applied.priority = kept & JOB_OBJECT_LIMIT_PRIORITY_CLASS != 0;
        if plan.ui_limits {
            let ui = JOBOBJECT_BASIC_UI_RESTRICTIONS {
                UIRestrictionsClass: JOB_OBJECT_UILIMIT_HANDLES
                    | JOB_OBJECT_UILIMIT_READCLIPBOARD
                    | JOB_OBJECT_UILIMIT_WRITECLIPBOARD
                    | JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS
                    | JOB_OBJECT_UILIMIT_DISPLAYSETTINGS
                    | JOB_OBJECT_UILIMIT_GLOBALATOMS
                    | JOB_OBJECT_UILIMIT_DESKTOP
                    | JOB_OBJECT_UILIMIT_EXITWINDOWS,
            };
            applied.ui_limits = job.set(JobObjectBasicUIRestrictions, &ui);
        }
        if let Some(rate) = plan.cpu_rate {
            let mut cpu = JOBOBJECT_CPU_RATE_CONTROL_INFORMATION {
                ControlFlags: JOB_OBJECT_CPU_RATE_CONTROL_ENABLE
                    | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP,
                ..Default::default()
            };
            cpu.Anonymous.CpuRate = rate;
            applied.cpu_rate = job.set(JobObjectCpuRateControlInformation, &cpu);
        }
        Ok(job)
    }

    fn set<T>(&self, class: i32, info: &T) -> bool {
        // SAFETY: `info` points to a live `T` of the size given, the structure
        // `class` names (the callers pair them); the job handle is valid.
        unsafe {
            SetInformationJobObject(
                raw(&self.handle),
                class,
                (info as *const T).cast(),
                size_of::<T>() as u32,
            ) != 0
        }
    }

    fn query<T: Default>(&self, class: i32) -> Option<T> {
        let mut out = T::default();
        // SAFETY: `out` is a writable `T` of the size given, the structure
        // `class` names (the callers pair them); the job handle is valid.
        let ok = unsafe {
            QueryInformationJobObject(
                raw(&self.handle),
                class,
                (&mut out as *mut T).cast(),
                size_of::<T>() as u32,
                std::ptr::null_mut(),
            ) != 0
        };
        ok.then_some(out)
    }

    fn extended_limits(&self) -> Option<JOBOBJECT_EXTENDED_LIMIT_INFORMATION> {
        self.query(JobObjectExtendedLimitInformation)
    }

    /// Puts the (still suspended) process in the job, and says whether the
    /// system then reports it there.
    pub fn assign(&self, process: &OwnedHandle) -> io::Result<bool> {
        // SAFETY: both handles are valid and owned by the caller and us.
        if unsafe { AssignProcessToJobObject(raw(&self.handle), raw(process)) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut inside = 0;
        // SAFETY: valid handles; `inside` is a writable BOOL.
        let ok = unsafe { IsProcessInJob(raw(process), raw(&self.handle), &mut inside) };
        Ok(ok != 0 && inside != 0)
    }

    /// Ends every process of the job at once.
    pub fn terminate(&self, exit_code: u32) -> bool {
        // SAFETY: the job handle is valid.
        unsafe { TerminateJobObject(raw(&self.handle), exit_code) != 0 }
    }

    pub fn counters(&self) -> JobCounters {
        let info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = self
            .query(JobObjectBasicAccountingInformation)
            .unwrap_or_default();
        let total = (info.TotalUserTime.max(0) + info.TotalKernelTime.max(0)) as u64;
        JobCounters {
            cpu_ms: total / 10_000,
            active_processes: info.ActiveProcesses,
        }
    }

    /// The PIDs of the job's live processes.
    pub fn pids(&self) -> Vec<u32> {
        // The list's header (two u32) then one usize per process.
        const MAX: usize = 1024;
        #[repr(C)]
        struct List {
            assigned: u32,
            listed: u32,
            ids: [usize; MAX],
        }
        let mut list = List {
            assigned: 0,
            listed: 0,
            ids: [0; MAX],
        };
        // SAFETY: `list` has the layout of JOBOBJECT_BASIC_PROCESS_ID_LIST
        // with room for MAX ids, and its size is what is passed.
        let ok = unsafe {
            QueryInformationJobObject(
                raw(&self.handle),
                JobObjectBasicProcessIdList,
                (&mut list as *mut List).cast(),
                size_of::<List>() as u32,
                std::ptr::null_mut(),
            ) != 0
        };
        if !ok {
            return Vec::new();
        }
        let n = (list.listed as usize).min(MAX);
        list.ids[..n].iter().map(|id| *id as u32).collect()
    }
}

/// User + kernel time of one process, in ms (a system that keeps no job
/// accounting, as Wine, still answers this).
pub fn process_cpu_ms(pid: u32) -> u64 {
    // SAFETY: OpenProcess takes plain values; the result is checked.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        return 0;
    }
    // SAFETY: a fresh, valid handle that nothing else owns.
    let h = unsafe { OwnedHandle::from_raw_handle(h as RawHandle) };
    let mut times = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut times;
    // SAFETY: a valid handle and four writable FILETIMEs.
    if unsafe { GetProcessTimes(raw(&h), created, exited, kernel, user) } == 0 {
        return 0;
    }
    let t = |f: &FILETIME| (u64::from(f.dwHighDateTime) << 32) | u64::from(f.dwLowDateTime);
    (t(&times[2]) + t(&times[3])) / 10_000
}

/// A process's creation time (100 ns since 1601) and working set, if it can
/// still be opened.
pub fn process_facts(pid: u32) -> Option<(u64, u64)> {
    // SAFETY: OpenProcess takes plain values; the result is checked.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        return None;
    }
    // SAFETY: `h` is a fresh, valid handle that nothing else owns.
    let h = unsafe { OwnedHandle::from_raw_handle(h as RawHandle) };
    Some((creation_time(&h)?, working_set(&h)))
}

/// When `process` was created (100 ns since 1601).
pub fn creation_time(process: &OwnedHandle) -> Option<u64> {
    let mut times = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut times;
    // SAFETY: a valid handle and four writable FILETIMEs.
    let ok = unsafe { GetProcessTimes(raw(process), created, exited, kernel, user) } != 0;
    ok.then(|| (u64::from(times[0].dwHighDateTime) << 32) | u64::from(times[0].dwLowDateTime))
}

fn working_set(process: &OwnedHandle) -> u64 {
    let mut counters = PROCESS_MEMORY_COUNTERS {
        cb: size_of::<PROCESS_MEMORY_COUNTERS>() as u32,
        ..Default::default()
    };
    // SAFETY: a valid handle and a writable structure of the size in `cb`.
    let ok = unsafe { K32GetProcessMemoryInfo(raw(process), &mut counters, counters.cb) } != 0;
    if ok {
        counters.WorkingSetSize as u64
    } else {
        0
    }
}
