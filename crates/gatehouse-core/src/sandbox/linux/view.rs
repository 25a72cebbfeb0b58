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
//!
//! Scratch itself is a tmpfs of the quota's size mounted in that namespace:
//! the kernel then holds the quota, whatever hides the bytes from a walk of
//! the directory (a file deleted while open or mapped, its descriptor in
//! flight on a socket, paths past `PATH_MAX`). The host reads its use with
//! `statfs` through `/proc/PID/root` ([`super::procfs::fs_used`]); it ends
//! with the namespace, so nothing of it outlives the server.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, RulesetCreated};
use nix::libc;

use super::sys;
use crate::error::{Error, Result, codes};

/// What the child needs to enter its view, prepared in the host: the child
/// only makes system calls on it (nothing allocates after the fork).
pub(crate) struct ReadOnlyView {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The working directory (scratch), entered again once it is writable.
    cwd: CString,
    writable: Vec<CString>,
    /// Mount options of the tmpfs put over `cwd`, if any.
    scratch_tmpfs: Option<CString>,
    /// The child's Landlock ruleset and what it grants on scratch: a rule
    /// the host made on the directory does not reach the tmpfs mounted over
    /// it (Landlock skips hidden mount points), so the child adds one on the
    /// tmpfs once mounted, before the ruleset is enforced.
    scratch_rule: Option<(OwnedFd, u64)>,
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
    /// changed; with `scratch_bytes`, `cwd` is a fresh tmpfs of that size.
    pub fn new<'a>(
        cwd: &Path,
        writable: impl IntoIterator<Item = &'a Path>,
        scratch_bytes: Option<u64>,
    ) -> Result<Self> {
        let cwd = c_path(cwd)?;
        let mut writable: Vec<CString> = writable.into_iter().map(c_path).collect::<Result<_>>()?;
        writable.push(cwd.clone());
        // The same ids inside as outside: files keep their owners.
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        // Inodes are bounded too (each costs kernel memory, not blocks): one
        // per 4 KiB of the quota, at least 4096.
        let scratch_tmpfs = scratch_bytes.map(|bytes| {
            let inodes = (bytes / 4096).max(4096);
            CString::new(format!("size={bytes},nr_inodes={inodes},mode=700"))
                .expect("no NUL in numbers")
        });
        Ok(Self {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            cwd,
            writable,
            scratch_tmpfs,
            scratch_rule: None,
        })
    }

    /// Makes the scratch tmpfs readable and writable under `ruleset` (the
    /// same grant the ruleset gives the directory beneath it).
    pub fn grant_scratch(&mut self, ruleset: &RulesetCreated) -> Result<()> {
        if self.scratch_tmpfs.is_none() {
            return Ok(());
        }
        let failed = |e: std::io::Error| {
            Error::new(
                codes::SPAWN_FAILED,
                format!("could not share the Landlock ruleset: {e}"),
            )
        };
        let fd: Option<OwnedFd> = ruleset.try_clone().map_err(failed)?.into();
        let kernel = ABI::from(i32::from(super::landlock::probe().abi));
        let access = AccessFs::from_all(super::landlock::RULESET_ABI) & AccessFs::from_all(kernel);
        self.scratch_rule = fd.map(|fd| (fd, access.bits()));
        Ok(())
    }

    /// Runs in the forked child, before its capabilities are dropped:
    /// async-signal-safe calls only.
    pub fn enter(&self) -> std::io::Result<()> {
        // CLONE_NEWIPC too: System V shared memory and message queues of the
        // host's namespace outlived the server (1.5 GiB of segments after an
        // attack run's child was gone); a namespace of its own ends with it.
        sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWIPC)?;
        sys::write_file(c"/proc/self/setgroups", b"deny")?;
        sys::write_file(c"/proc/self/uid_map", &self.uid_map)?;
        sys::write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // Nothing done below propagates back to the host's namespace.
        sys::mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        // Each writable path becomes a mount of its own before everything
        // turns read-only, so it can be turned back on its own.
        for path in &self.writable {
            sys::mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
        }
        sys::set_readonly(c"/", true)?;
        for path in &self.writable {
            sys::set_readonly(path, false)?;
        }
        if let Some(options) = &self.scratch_tmpfs {
            sys::mount_tmpfs(c"gatehouse-scratch", &self.cwd, options)?;
        }
        // The working directory was entered before its writable mount
        // existed and still points below it, at the read-only one.
        sys::chdir(&self.cwd)?;
        if let Some((ruleset, access)) = &self.scratch_rule {
            sys::add_scratch_rule(ruleset.as_raw_fd(), *access)?;
        }
        Ok(())
    }
}

/// Whether this host can give children a read-only view (user namespaces
/// allowed, `mount_setattr` present: Linux 5.12) with scratch in a tmpfs,
/// tried once by entering one in a throwaway child.
#[allow(unsafe_code)]
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let Ok(view) = ReadOnlyView::new(&std::env::temp_dir(), std::iter::empty(), Some(1 << 20))
        else {
            return false;
        };
        let mut cmd = std::process::Command::new("/");
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: the closure runs in the forked child before `exec`: it only
        // makes the async-signal-safe system calls of `enter` on what was
        // built here, and ends the child with `_exit` before anything runs.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                view.enter()?;
                sys::exit_now(0)
            });
        }
        cmd.spawn()
            .and_then(|mut child| child.wait())
            .is_ok_and(|status| status.success())
    })
}
