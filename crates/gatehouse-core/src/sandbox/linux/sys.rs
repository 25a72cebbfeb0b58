//! Every raw system call of the Linux backend, each behind a safe function
//! with its SAFETY note: the calls no wrapper crate covers (`mount_setattr`,
//! which rustix lists as not implemented; `landlock_add_rule` on the tmpfs in
//! the forked child, where the landlock crate's rule API is not documented
//! as async-signal-safe; the Landlock ABI query; `close_range`), and the
//! libc calls the child makes between `fork` and `exec` (all
//! async-signal-safe: integer arguments, or strings and buffers prepared in
//! the host). docs/decisions.md ("Hand-written raw calls") says why each is
//! hand-written. The only other `unsafe` of the backend is the two
//! `pre_exec` hooks that run these (`child::install`, `view::available`).

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::fd::RawFd;

use nix::libc;

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the
/// kernel's ABI version, or an error (ENOSYS, EOPNOTSUPP) when it has none.
pub(crate) fn landlock_abi() -> u8 {
    const LANDLOCK_CREATE_RULESET_VERSION: nix::libc::c_long = 1;
    // SAFETY: a raw system call with a null attribute pointer and size 0, as
    // the version query requires; it reads and writes no memory of ours.
    let v = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0 as nix::libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.clamp(0, u8::MAX as nix::libc::c_long) as u8
}

/// Empties the capability bounding set and the ambient set, so `exec` grants
/// no capability even to uid 0. Errors are ignored: a process without
/// CAP_SETPCAP has no capabilities to hand on in the first place.
pub(crate) fn drop_capabilities(last: i32) {
    use nix::libc::{PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP, c_ulong, prctl};
    for cap in 0..=last {
        // SAFETY: prctl with integer arguments only; async-signal-safe.
        unsafe {
            prctl(
                PR_CAPBSET_DROP,
                cap as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
            );
        }
    }
    // SAFETY: as above.
    unsafe {
        prctl(
            PR_CAP_AMBIENT,
            PR_CAP_AMBIENT_CLEAR_ALL as c_ulong,
            0 as c_ulong,
            0 as c_ulong,
            0 as c_ulong,
        );
    }
}

/// `wanted` (capped at 19) or the host's own niceness, whichever is nicer:
/// an unprivileged process cannot go below its parent's, and a host already
/// niced must not fail every spawn.
pub(crate) fn nice_not_below_host(wanted: u8) -> i32 {
    nix::errno::Errno::clear();
    // SAFETY: getpriority with integer arguments only.
    let host = unsafe { nix::libc::getpriority(nix::libc::PRIO_PROCESS, 0) };
    let host = if host == -1 && nix::errno::Errno::last_raw() != 0 {
        0
    } else {
        host
    };
    host.max(i32::from(wanted.min(19)))
}

/// Sets the calling thread's niceness (Linux keeps it per thread; a child
/// process inherits it).
pub(crate) fn set_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority with integer arguments only; async-signal-safe.
    let rc = unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes `content` to the existing file `path` in one `write` (a `/proc` or
/// cgroup control file); async-signal-safe, for the child before `exec`.
pub(crate) fn write_file(path: &CStr, content: &[u8]) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path and a live buffer; open/write/close are
    // async-signal-safe.
    unsafe {
        let fd = nix::libc::open(path.as_ptr(), nix::libc::O_WRONLY | nix::libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = nix::libc::write(fd, content.as_ptr().cast(), content.len());
        let err = std::io::Error::last_os_error();
        nix::libc::close(fd);
        if written != content.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec: the host may have
/// inherited open files from whatever started it (a shell redirect, a desktop
/// launcher), and Landlock does not rule what is already open. Kernels before
/// 5.11 lack `close_range`; there the std's own CLOEXEC is all there is.
pub(crate) fn close_inherited_on_exec() {
    const CLOSE_RANGE_CLOEXEC: nix::libc::c_uint = 4;
    // SAFETY: close_range with integer arguments only; async-signal-safe.
    unsafe {
        nix::libc::syscall(
            nix::libc::SYS_close_range,
            3 as nix::libc::c_uint,
            nix::libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
    }
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `landlock_add_rule` granting `access` beneath the working directory.
pub(crate) fn add_scratch_rule(ruleset: RawFd, access: u64) -> std::io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_long = 1;
    // SAFETY: a NUL-terminated path; O_PATH opens nothing for reading.
    let dir = unsafe {
        libc::open(
            c".".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir,
    };
    // SAFETY: a live, correctly laid out attribute and two open descriptors.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0 as libc::c_uint,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: the descriptor opened above.
    unsafe { libc::close(dir) };
    if rc == 0 { Ok(()) } else { Err(err) }
}

pub(crate) fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub(crate) fn mount(
    source: Option<&CStr>,
    target: &CStr,
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
pub(crate) fn set_readonly(path: &CStr, readonly: bool) -> std::io::Result<()> {
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

/// `unshare(flags)`.
pub(crate) fn unshare(flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: integer arguments only; async-signal-safe.
    check(unsafe { libc::unshare(flags) })
}

/// Mounts a fresh tmpfs named `source` over `target` with `options`
/// (nosuid, nodev).
pub(crate) fn mount_tmpfs(source: &CStr, target: &CStr, options: &CStr) -> std::io::Result<()> {
    // SAFETY: NUL-terminated strings that outlive the call.
    check(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        )
    })
}

/// `chdir(path)`.
pub(crate) fn chdir(path: &CStr) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path that outlives the call.
    check(unsafe { libc::chdir(path.as_ptr()) })
}

/// Ends the calling (forked) process at once, running nothing of the
/// parent's (no atexit handlers, no buffered output flushed twice).
pub(crate) fn exit_now(code: libc::c_int) -> ! {
    // SAFETY: `_exit` is async-signal-safe and takes an integer.
    unsafe { libc::_exit(code) }
}
