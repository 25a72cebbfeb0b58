//! Starting the child: three anonymous pipes, the only handles it inherits
//! (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`); `CreateProcessAsUserW` with the
//! restricted token (or `CreateProcessW` for the `none` backend), suspended,
//! without a console window, with the exact environment block; then into
//! the job, and only then resumed, so no instruction of it runs outside.
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{HANDLE, HANDLE_FLAG_INHERIT, SetHandleInformation};
use windows_sys::Win32::System::Pipes::CreatePipe;
use windows_sys::Win32::System::Threading::{
    CREATE_NO_WINDOW, CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT, CreateProcessAsUserW,
    CreateProcessW, DeleteProcThreadAttributeList, EXTENDED_STARTUPINFO_PRESENT,
    InitializeProcThreadAttributeList, LPPROC_THREAD_ATTRIBUTE_LIST,
    PROC_THREAD_ATTRIBUTE_HANDLE_LIST, PROCESS_INFORMATION, ResumeThread, STARTF_USESTDHANDLES,
    STARTUPINFOEXW, TerminateProcess, UpdateProcThreadAttribute,
};

use super::command_line::Launch;
use super::job::Job;

/// A started child: its process handle, PID and the host's ends of its pipes.
#[derive(Debug)]
pub struct Started {
    pub process: OwnedHandle,
    pub pid: u32,
    pub stdin: OwnedHandle,
    pub stdout: OwnedHandle,
    pub stderr: OwnedHandle,
    pub in_job: bool,
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle() as HANDLE
}

fn owned(h: HANDLE) -> OwnedHandle {
    // SAFETY: called only on fresh handles returned by a successful system
    // call, each owned exactly once.
    unsafe { OwnedHandle::from_raw_handle(h as RawHandle) }
}

/// One pipe: (read end, write end), neither inheritable yet.
fn pipe() -> io::Result<(OwnedHandle, OwnedHandle)> {
    let (mut r, mut w): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: null security attributes (not inheritable); both ends written
    // on success and then owned.
    if unsafe { CreatePipe(&mut r, &mut w, std::ptr::null(), 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((owned(r), owned(w)))
}

fn set_inherit(h: &OwnedHandle, on: bool) -> io::Result<()> {
    let flag = if on { HANDLE_FLAG_INHERIT } else { 0 };
    // SAFETY: a valid handle; only its inherit flag changes.
    if unsafe { SetHandleInformation(raw(h), HANDLE_FLAG_INHERIT, flag) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A thread attribute list holding one handle list; deleted on drop.
struct Attributes {
    buf: Vec<usize>,
    /// The handles the list points to: must live as long as the list.
    _handles: Box<[HANDLE; 3]>,
}

impl Attributes {
    fn handle_list(handles: [HANDLE; 3]) -> io::Result<Attributes> {
        let mut size = 0usize;
        // SAFETY: the documented size query: null list, one attribute; it
        // fails with ERROR_INSUFFICIENT_BUFFER and writes `size`.
        unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), 1, 0, &mut size) };
        let mut attrs = Attributes {
            buf: vec![0usize; size.div_ceil(size_of::<usize>())],
            _handles: Box::new(handles),
        };
        let list = attrs.list();
        // SAFETY: `list` points to at least `size` writable, aligned bytes.
        if unsafe { InitializeProcThreadAttributeList(list, 1, 0, &mut size) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the list was initialised for one attribute; the value
        // points to three handles in a box that lives as long as the list.
        let ok = unsafe {
            UpdateProcThreadAttribute(
                list,
                0,
                PROC_THREAD_ATTRIBUTE_HANDLE_LIST as usize,
                attrs._handles.as_ptr().cast(),
                size_of::<[HANDLE; 3]>(),
                std::ptr::null_mut(),
                std::ptr::null(),
            )
        };
        if ok == 0 {
            let e = io::Error::last_os_error();
            // SAFETY: initialised above, deleted once (Drop is skipped by
            // forgetting the buffer's owner below).
            unsafe { DeleteProcThreadAttributeList(list) };
            attrs.buf = Vec::new();
            return Err(e);
        }
        Ok(attrs)
    }

    fn list(&mut self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
        self.buf.as_mut_ptr().cast()
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let list = self.list();
            // SAFETY: the list was initialised and not yet deleted.
            unsafe { DeleteProcThreadAttributeList(list) };
        }
    }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(Some(0)).collect()
}

/// Starts `launch` in `cwd` with `env` (a block from `env_block::block`),
/// under `token` if given, inside `job`. The child is ended, never left
/// running, if it cannot be put in the job.
pub fn start(
    launch: &Launch,
    env: &[u16],
    cwd: &Path,
    token: Option<&OwnedHandle>,
    job: &Job,
) -> io::Result<Started> {
    let (child_in, host_in) = pipe()?;
    let (host_out, child_out) = pipe()?;
    let (host_err, child_err) = pipe()?;
    let child_ends = [&child_in, &child_out, &child_err];
    // Inheritable only around CreateProcess: another spawn in this host
    // that inherits every inheritable handle could otherwise take them.
    for h in child_ends {
        set_inherit(h, true)?;
    }
    let result = create_suspended(launch, env, cwd, token, child_ends.map(raw));
    for h in child_ends {
        let _ = set_inherit(h, false);
    }
    let (process, thread, pid) = result?;
    // The host's copies of the child's ends go now: the child's end of
    // stdout and stderr then reach end-of-file when the child's tree is gone.
    drop((child_in, child_out, child_err));
    let in_job = match job.assign(&process) {
        Ok(inside) => inside,
        Err(e) => {
            // SAFETY: a valid process handle of our own suspended child.
            unsafe { TerminateProcess(raw(&process), 1) };
            return Err(e);
        }
    };
    // SAFETY: a valid thread handle of our suspended child's first thread.
    if unsafe { ResumeThread(raw(&thread)) } == u32::MAX {
        let e = io::Error::last_os_error();
        job.terminate(1);
        return Err(e);
    }
    Ok(Started {
        process,
        pid,
        stdin: host_in,
        stdout: host_out,
        stderr: host_err,
        in_job,
    })
}

fn create_suspended(
    launch: &Launch,
    env: &[u16],
    cwd: &Path,
    token: Option<&OwnedHandle>,
    [stdin, stdout, stderr]: [HANDLE; 3],
) -> io::Result<(OwnedHandle, OwnedHandle, u32)> {
    let mut attrs = Attributes::handle_list([stdin, stdout, stderr])?;
    let mut si = STARTUPINFOEXW::default();
    si.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = stdin;
    si.StartupInfo.hStdOutput = stdout;
    si.StartupInfo.hStdError = stderr;
    si.lpAttributeList = attrs.list();
    let application = wide(&launch.application);
    let mut command_line = wide(&launch.command_line);
    let cwd: Vec<u16> = cwd.as_os_str().encode_wide().chain(Some(0)).collect();
    let flags = CREATE_SUSPENDED
        | CREATE_NO_WINDOW
        | CREATE_UNICODE_ENVIRONMENT
        | EXTENDED_STARTUPINFO_PRESENT;
    let mut pi = PROCESS_INFORMATION::default();
    // SAFETY: every string is NUL-terminated and lives across the call (the
    // command line mutable, as CreateProcess requires); the environment is a
    // complete UTF-16 block; `si` and its attribute list are initialised and
    // outlive the call; `pi` is written on success.
    let ok = unsafe {
        match token {
            Some(token) => CreateProcessAsUserW(
                raw(token),
                application.as_ptr(),
                command_line.as_mut_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                1,
                flags,
                env.as_ptr().cast(),
                cwd.as_ptr(),
                &si.StartupInfo,
                &mut pi,
            ),
            None => CreateProcessW(
                application.as_ptr(),
                command_line.as_mut_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                1,
                flags,
                env.as_ptr().cast(),
                cwd.as_ptr(),
                &si.StartupInfo,
                &mut pi,
            ),
        }
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((owned(pi.hProcess), owned(pi.hThread), pi.dwProcessId))
}
