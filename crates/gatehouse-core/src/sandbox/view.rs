//! The read-only view: the child's own mount namespace, inside a user
//! namespace of its own (so no privilege is needed), in which every mount is
//! read-only but its scratch directory and the profile's read-write paths,
//! and an IPC namespace of its own.
//!
//! Landlock rules what a child may open, not a file's metadata: under
//! Landlock alone a child could `chmod` (narrowing or widening for reading),
//! `chown` within the user's own ids, or reset the times of any file of the
//! user, the site database and `~/.ssh` among them. On a read-only mount
//! those calls fail with `EROFS`, whatever the path. Landlock then still
//! decides what may be opened; nothing here widens it.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use nix::libc;

use super::child::write_file;
use crate::error::{Error, Result, codes};

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// What the child needs to enter its view, prepared in the host: the child
/// only makes system calls on it (nothing allocates after the fork).
pub(crate) struct ReadOnlyView {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The working directory (scratch), entered again once it is writable.
    cwd: CString,
    writable: Vec<CString>,
}

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            codes::SPAWN_FAILED,
            format!("path {} holds a NUL byte", p.display()),
        )
    })
}

impl ReadOnlyView {
    /// A view in which only `cwd` and `writable` (existing paths) can be
    /// changed.
    pub fn new<'a>(cwd: &Path, writable: impl IntoIterator<Item = &'a Path>) -> Result<Self> {
        let cwd = c_path(cwd)?;
        let mut writable: Vec<CString> = writable.into_iter().map(c_path).collect::<Result<_>>()?;
        writable.push(cwd.clone());
        // The same ids inside as outside: files keep their owners.
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        Ok(Self {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            cwd,
            writable,
        })
    }

    /// Runs in the forked child, before its capabilities are dropped:
    /// async-signal-safe calls only.
    pub fn enter(&self) -> std::io::Result<()> {
        // SAFETY: integer arguments only.
        // CLONE_NEWIPC too: System V shared memory and message queues of the
        // host's namespace outlived the server (1.5 GiB of segments after an
        // attack run's child was gone); a namespace of its own ends with it.
        check(unsafe {
            libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWIPC)
        })?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // Nothing done below propagates back to the host's namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        // Each writable path becomes a mount of its own before everything
        // turns read-only, so it can be turned back on its own.
        for path in &self.writable {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
        }
        set_readonly(c"/", true)?;
        for path in &self.writable {
            set_readonly(path, false)?;
        }
        // The working directory was entered before its writable mount
        // existed and still points below it, at the read-only one.
        // SAFETY: a NUL-terminated path.
        check(unsafe { libc::chdir(self.cwd.as_ptr()) })
    }
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let source = source.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings (or null) that outlive the call.
    check(unsafe {
        libc::mount(
            source,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    })
}

/// Read-only on (or off) for the mount at `path` and every mount below it.
fn set_readonly(path: &std::ffi::CStr, readonly: bool) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: if readonly { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if readonly { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a NUL-terminated path and a live, correctly sized struct.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(rc as libc::c_int)
}

/// Whether this host can give children a read-only view (user namespaces
/// allowed, `mount_setattr` present: Linux 5.12), tried once by entering
/// one in a throwaway child.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let Ok(view) = ReadOnlyView::new(&std::env::temp_dir(), std::iter::empty()) else {
            return false;
        };
        let mut cmd = std::process::Command::new("/");
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: the closure only makes system calls (see `enter`) and ends
        // the child with `_exit` before anything is executed.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                view.enter()?;
                libc::_exit(0)
            });
        }
        cmd.spawn()
            .and_then(|mut child| child.wait())
            .is_ok_and(|status| status.success())
    })
}
