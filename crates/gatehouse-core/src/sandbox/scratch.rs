//! Scratch directories: one per connection, under a root outside every site
//! (the user's runtime directory, else the cache directory; mode 0700).
//!
//! Each scratch directory `<id>/` has siblings `<id>.lock`, which the owning
//! host holds an exclusive lock on while the directory lives (`flock`, or
//! `LockFileEx` on Windows: the kernel drops it when the host dies, however
//! it dies), and `<id>.json`, the
//! [`Owner`] record: host, site, child and every descendant seen, each as
//! PID + start time. A sweep that can take a lock knows the host is dead: it
//! kills the recorded processes that are still the same processes (and any
//! process working inside the directory), only then removes the directory, and
//! leaves `<id>.dead.json` for the site to close the run's records.
//!
//! Cleanup never follows a symlink: a symlinked root is refused, a symlinked
//! entry is unlinked, never entered.

use std::fs::{self, DirBuilder, File, OpenOptions};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::os;
use super::process::ProcId;
use crate::error::{Error, Result, codes};

/// Overrides where scratch directories live (must be outside every site).
pub const ENV_SCRATCH_DIR: &str = "GATEHOUSE_SCRATCH_DIR";

/// The default scratch root: `$GATEHOUSE_SCRATCH_DIR`, else on Windows
/// `%LOCALAPPDATA%\Gatehouse\scratch`, else `$XDG_RUNTIME_DIR/gatehouse/scratch`,
/// else `$XDG_CACHE_HOME/gatehouse/scratch`, else `~/.cache/gatehouse/scratch`.
pub fn default_root() -> Result<PathBuf> {
    root_from(|k| std::env::var_os(k), cfg!(windows))
}

/// [`default_root`] with the environment read through `var`, on Windows when
/// `windows` (pure, so both systems' answers are tested on each).
fn root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>, windows: bool) -> Result<PathBuf> {
    let env = |k: &str| var(k).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(p) = env(ENV_SCRATCH_DIR) {
        return Ok(p);
    }
    if windows {
        // Outside every site and per user; Windows has no HOME of its own.
        return env("LOCALAPPDATA")
            .map(|p| p.join("Gatehouse").join("scratch"))
            .ok_or_else(|| {
                Error::invalid(
                    codes::SCRATCH_UNSAFE,
                    "LOCALAPPDATA is not set: no folder to put scratch directories in",
                    format!("set LOCALAPPDATA or {ENV_SCRATCH_DIR} to a folder of your own"),
                )
            });
    }
    let base = env("XDG_RUNTIME_DIR")
        .or_else(|| env("XDG_CACHE_HOME"))
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .ok_or_else(|| {
            Error::invalid(
                codes::SCRATCH_UNSAFE,
                "no runtime or cache directory to put scratch directories in",
                format!("set XDG_RUNTIME_DIR, XDG_CACHE_HOME, HOME or {ENV_SCRATCH_DIR}"),
            )
        })?;
    Ok(base.join("gatehouse").join("scratch"))
}

/// Who owns a scratch directory and what ran in it, kept next to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub host: Option<ProcId>,
    /// The site the connection belongs to, if any.
    pub site: Option<PathBuf>,
    pub child: Option<ProcId>,
    pub spawned_at_ms: i64,
    /// Every descendant seen while the host lived (the child's leftovers).
    pub tracked: Vec<ProcId>,
}

/// A run whose host died: what the sweep found and killed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadRun {
    pub owner: Owner,
    /// Processes still running at the sweep, all killed before the removal.
    pub killed: Vec<ProcId>,
}

/// The folder holding every connection's scratch directory.
#[derive(Debug, Clone)]
pub struct ScratchRoot {
    root: PathBuf,
    site: Option<PathBuf>,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub removed: Vec<PathBuf>,
    pub dead_runs: Vec<DeadRun>,
}

fn unsafe_root(root: &Path, why: &str) -> Error {
    Error::invalid(
        codes::SCRATCH_UNSAFE,
        format!("the scratch root {} {why}", root.display()),
        "point it at a real directory of your own outside every site (GATEHOUSE_SCRATCH_DIR), or remove the entry",
    )
}

/// Whether `name` is one of the entries a scratch root holds: a run's
/// directory `c-<pid>-<nanos>-<n>`, its `.lock`, `.json` or `.dead.json`, or
/// one of those being written (`.tmp`).
fn is_scratch_entry(name: &str) -> bool {
    let name = name.strip_suffix(".tmp").unwrap_or(name);
    let id = [".dead.json", ".json", ".lock"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    id.strip_prefix("c-").is_some_and(|rest| {
        let parts: Vec<&str> = rest.split('-').collect();
        parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Refuses a root holding anything but scratch entries: a root pointed at
/// the user's home or a folder of sites would have its folders swept away
/// (a sweep removes every run directory whose owner is gone) and its mode
/// narrowed.
fn only_scratch_entries(root: &Path) -> Result<()> {
    let entries = fs::read_dir(root).map_err(|e| io_error("listing the scratch root", root, e))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_scratch_entry) {
            return Err(unsafe_root(
                root,
                &format!(
                    "holds {}, which is not Gatehouse scratch: a scratch root must be a folder of its own",
                    name.to_string_lossy()
                ),
            ));
        }
    }
    Ok(())
}

/// Creates `dir` (mode 0700) or checks that it is a real directory we own;
/// refuses a symlink.
fn ensure_private_dir(dir: &Path, is_parent: bool) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(unsafe_root(dir, "is a symlink")),
        Ok(m) if !m.is_dir() => Err(unsafe_root(dir, "is not a directory")),
        #[cfg_attr(not(unix), allow(unused_variables))]
        Ok(m) => {
            #[cfg(unix)]
            if m.uid() != nix::unistd::geteuid().as_raw() {
                return Err(unsafe_root(dir, "belongs to another user"));
            }
            if !is_parent {
                only_scratch_entries(dir)?;
            }
            #[cfg(unix)]
            if m.mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .map_err(|e| io_error("restricting the scratch root", dir, e))?;
            }
            Ok(())
        }
        Err(_) => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| io_error("creating the scratch root", parent, e))?;
            }
            match private_dir_builder().create(dir) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    ensure_private_dir(dir, is_parent)
                }
                Err(e) => Err(io_error("creating the scratch root", dir, e)),
            }
        }
    }
}

impl ScratchRoot {
    /// Opens (creating, mode 0700) the root and sweeps what dead hosts left.
    pub fn open(root: impl Into<PathBuf>) -> Result<(Self, SweepReport)> {
        let root = root.into();
        if let Some(parent) = root.parent()
            && parent.file_name().is_some_and(|n| n == "gatehouse")
        {
            ensure_private_dir(parent, true)?;
        }
        ensure_private_dir(&root, false)?;
        let this = Self { root, site: None };
        let report = this.sweep()?;
        Ok((this, report))
    }

    /// Records `site` as the owner of the directories created from now on.
    pub fn for_site(mut self, site: &Path) -> Self {
        self.site = Some(site.canonicalize().unwrap_or_else(|_| site.to_path_buf()));
        self
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The site this root serves, if [`Self::for_site`] said.
    pub fn site(&self) -> Option<&Path> {
        self.site.as_deref()
    }

    /// Removes every scratch directory whose owner is gone, after killing what
    /// still runs from it.
    pub fn sweep(&self) -> Result<SweepReport> {
        let mut report = SweepReport::default();
        let entries = fs::read_dir(&self.root)
            .map_err(|e| io_error("listing the scratch root", &self.root, e))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // Nothing but scratch entries is ever touched (the root was checked
        // when opened; this holds whatever appeared since).
        for name in names.iter().filter(|n| is_scratch_entry(n)) {
            let path = self.root.join(name);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                // Never followed; the link itself goes.
                tracing::warn!(path = %path.display(), "symlink in the scratch root removed, not followed");
                let _ = fs::remove_file(&path);
            } else if let Some(id) = name.strip_suffix(".lock") {
                let Ok(file) = File::open(&path) else {
                    continue;
                };
                // Taking the lock means its owner is dead.
                if file.try_lock().is_ok() {
                    let lock = file;
                    let dir = self.root.join(id);
                    let owner_path = self.root.join(format!("{id}.json"));
                    let owner: Option<Owner> = fs::read(&owner_path)
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                    let killed = kill_leftovers(owner.as_ref(), &dir);
                    if fs::symlink_metadata(&dir).is_ok() {
                        remove_tree(&dir);
                        report.removed.push(dir);
                    }
                    if let Some(owner) = owner {
                        let run = DeadRun { owner, killed };
                        if run.owner.site.is_some() {
                            let tomb = self.root.join(format!("{id}.dead.json"));
                            let _ = fs::write(&tomb, serde_json::to_vec(&run).unwrap_or_default());
                        }
                        report.dead_runs.push(run);
                    }
                    let _ = fs::remove_file(&owner_path);
                    let _ = fs::remove_file(&path);
                    drop(lock);
                }
            } else if name.ends_with(".tmp") {
                // A lock or record being created right now is young; an old one is a leftover.
                let old = meta
                    .modified()
                    .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(60))
                    .unwrap_or(false);
                if old {
                    let _ = fs::remove_file(&path);
                }
            } else if meta.is_dir() && !names.contains(&format!("{name}.lock")) {
                // The lock is created before the directory and removed after it:
                // a directory without one belongs to nobody.
                remove_tree(&path);
                report.removed.push(path);
            }
        }
        Ok(report)
    }

    /// Takes the dead runs of `site` left by sweeps (whoever swept them).
    pub fn take_dead_runs(&self, site: &Path) -> Vec<DeadRun> {
        let site = site.canonicalize().unwrap_or_else(|_| site.to_path_buf());
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut runs = Vec::new();
        for e in entries.filter_map(|e| e.ok()) {
            if !e.file_name().to_string_lossy().ends_with(".dead.json") {
                continue;
            }
            let path = e.path();
            let Some(run) = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<DeadRun>(&b).ok())
            else {
                let _ = fs::remove_file(&path);
                continue;
            };
            if run.owner.site.as_deref() == Some(site.as_path()) {
                let _ = fs::remove_file(&path);
                runs.push(run);
            }
        }
        runs
    }

    /// A fresh, empty directory (mode 0700) owned by this process until dropped.
    pub fn create(&self) -> Result<ScratchDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = format!(
            "c-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = self.root.join(format!("{id}.lock.tmp"));
        let lock_path = self.root.join(format!("{id}.lock"));
        let dir = self.root.join(&id);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_error("creating a scratch lock", &tmp, e))?;
        // Lock before the name is final, so a sweep never sees it unlocked.
        file.try_lock()
            .map_err(|e| io_error("locking a scratch lock", &tmp, e.into()))?;
        let lock = file;
        fs::rename(&tmp, &lock_path)
            .map_err(|e| io_error("naming a scratch lock", &lock_path, e))?;
        if let Err(e) = private_dir_builder().create(&dir) {
            let _ = fs::remove_file(&lock_path);
            return Err(io_error("creating a scratch directory", &dir, e));
        }
        let scratch = ScratchDir {
            owner_path: self.root.join(format!("{id}.json")),
            dir,
            lock_path,
            lock: Some(lock),
            owner: Owner {
                host: ProcId::of(std::process::id() as i32),
                site: self.site.clone(),
                ..Owner::default()
            },
        };
        scratch.write_owner()?;
        Ok(scratch)
    }
}

/// Kills what a dead host's run left running (see `os::kill_leftovers`).
fn kill_leftovers(owner: Option<&Owner>, dir: &Path) -> Vec<ProcId> {
    let recorded = owner
        .map(|o| o.child.iter().chain(&o.tracked).copied().collect())
        .unwrap_or_default();
    os::kill_leftovers(recorded, dir)
}

/// A directory builder making folders only their owner may enter (0700 on
/// Unix; on Windows a new folder under the user's profile inherits its
/// owner-only ACL).
fn private_dir_builder() -> DirBuilder {
    #[allow(unused_mut)]
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    builder.mode(0o700);
    builder
}

/// Removes a directory tree without following symlinks (std's
/// `remove_dir_all` unlinks links, never enters them); a symlink in place of
/// the directory is unlinked.
fn remove_tree(path: &Path) {
    if let Err(e) = remove_any(path) {
        tracing::warn!(path = %path.display(), error = %e, "scratch entry not removed");
    }
}

/// Removes `path`, a file or a whole directory tree, never following a
/// symlink, without recursion and holding one directory open at a time: a
/// server made a tree 30,000 levels deep, and the standard library's
/// recursive removal overflowed the stack of the thread tearing it down
/// (the host aborted) and would run out of descriptors before that.
#[cfg(unix)]
fn remove_any(path: &Path) -> std::io::Result<()> {
    use nix::dir::Dir;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = Dir::open(path, flags, Mode::empty())?;
    // Names from `path` down to `dir`; going up is `..` (the child is gone,
    // so nothing moves the tree meanwhile).
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    loop {
        let fd = dir.as_raw_fd();
        let mut subdir = None;
        let entries: Vec<(std::ffi::CString, bool)> = dir
            .iter()
            .filter_map(|e| e.ok())
            .filter(|e| !matches!(e.file_name().to_bytes(), b"." | b".."))
            .map(|e| {
                let is_dir = match e.file_type() {
                    Some(kind) => kind == nix::dir::Type::Directory,
                    // A file system that does not say: ask, never following.
                    None => nix::sys::stat::fstatat(
                        Some(fd),
                        e.file_name(),
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    )
                    .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR),
                };
                (e.file_name().to_owned(), is_dir)
            })
            .collect();
        for (name, is_dir) in entries {
            if is_dir {
                subdir.get_or_insert(name);
            } else {
                unlinkat(Some(fd), name.as_c_str(), UnlinkatFlags::NoRemoveDir)?;
            }
        }
        if let Some(name) = subdir {
            // A directory the server made unreadable is made readable first.
            let _ = nix::sys::stat::fchmodat(
                Some(fd),
                name.as_c_str(),
                Mode::S_IRWXU,
                nix::sys::stat::FchmodatFlags::NoFollowSymlink,
            );
            dir = Dir::openat(Some(fd), name.as_c_str(), flags, Mode::empty())?;
            names.push(std::ffi::OsString::from_vec(name.into_bytes()));
            continue;
        }
        let Some(name) = names.pop() else {
            break;
        };
        let parent = Dir::openat(Some(fd), "..", flags, Mode::empty())?;
        unlinkat(
            Some(parent.as_raw_fd()),
            name.as_os_str(),
            UnlinkatFlags::RemoveDir,
        )?;
        dir = parent;
    }
    drop(dir);
    fs::remove_dir(path)
}

/// Removes `path`, a file or a whole directory tree, never following a
/// symlink or junction (std's Windows `remove_dir_all` works on open handles
/// and removes reparse points without entering them).
#[cfg(not(unix))]
fn remove_any(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// How deep a scratch tree may go and still be measured (see
/// [`ScratchDir::usage_bytes`]).
pub const MAX_DEPTH: usize = 64;

/// One connection's working directory; removed (with its lock) when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    dir: PathBuf,
    lock_path: PathBuf,
    owner_path: PathBuf,
    /// Holds the lock on `<id>.lock` while open.
    lock: Option<File>,
    owner: Owner,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Records the child and the descendants seen so far (atomically: a
    /// killed host leaves the last complete record).
    pub fn record(&mut self, child: Option<ProcId>, tracked: &[ProcId]) -> Result<()> {
        if child.is_some() {
            self.owner.child = child;
            self.owner.spawned_at_ms = crate::time::now_ms();
        }
        self.owner.tracked = tracked.to_vec();
        self.write_owner()
    }

    fn write_owner(&self) -> Result<()> {
        let tmp = self.owner_path.with_extension("json.tmp");
        fs::write(
            &tmp,
            serde_json::to_vec(&self.owner).expect("owner serialises"),
        )
        .and_then(|()| fs::rename(&tmp, &self.owner_path))
        .map_err(|e| io_error("recording a scratch owner", &self.owner_path, e))
    }

    /// Disk the directory uses (allocated blocks), symlinks not followed;
    /// `None` when it cannot be measured: deeper than [`MAX_DEPTH`] levels,
    /// or a part of it unreadable. The watchdog counts that as over quota
    /// (a server hid 360 MiB in paths longer than `PATH_MAX`, which the walk
    /// skipped).
    pub fn usage_bytes(&self) -> Option<u64> {
        let mut total = 0;
        let mut pending = vec![(self.dir.clone(), 0usize)];
        while let Some((dir, depth)) = pending.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            for entry in entries {
                let path = entry.ok()?.path();
                let m = match fs::symlink_metadata(&path) {
                    Ok(m) => m,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(_) => return None,
                };
                #[cfg(unix)]
                let bytes = m.blocks() * 512;
                #[cfg(not(unix))]
                let bytes = m.len();
                total += bytes;
                if m.is_dir() {
                    if depth + 1 > MAX_DEPTH {
                        return None;
                    }
                    pending.push((path, depth + 1));
                }
            }
        }
        Some(total)
    }

    /// Removes the directory now; reports a failure instead of hiding it.
    pub fn remove(mut self) -> Result<()> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<()> {
        let Some(lock) = self.lock.take() else {
            return Ok(());
        };
        let result = remove_any(&self.dir)
            .map_err(|e| io_error("removing a scratch directory", &self.dir, e));
        // Directory first, lock last: a sweep never sees a live dir unlocked.
        let _ = fs::remove_file(&self.owner_path);
        let _ = fs::remove_file(&self.lock_path);
        drop(lock);
        result
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(e) = self.remove_inner() {
            tracing::warn!(error = %e, "scratch directory left behind; the next start sweeps it");
        }
    }
}

pub(crate) fn io_error(context: &str, path: &Path, err: std::io::Error) -> Error {
    tracing::error!(context, path = %path.display(), error = %err, "io error");
    Error::new(codes::IO_ERROR, format!("io error while {context}: {err}"))
        .detail(serde_json::json!({"path": path}))
}

/// Compiled on every system (Windows included, run under Wine).
#[cfg(test)]
mod root_tests {
    use super::*;

    /// Scratch goes under `%LOCALAPPDATA%\Gatehouse\scratch` on Windows
    /// (never under a HOME Windows does not have), under the XDG folders
    /// elsewhere; the override wins on both; nothing absolute is an error.
    #[test]
    fn the_default_scratch_root_is_per_user_on_each_system() {
        let abs = if cfg!(windows) {
            r"C:\Users\Zoë Smith\AppData\Local"
        } else {
            "/home/zoë smith/.local"
        };
        let env = |pairs: &[(&'static str, &'static str)]| {
            let pairs = pairs.to_vec();
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let local = [("LOCALAPPDATA", abs), ("HOME", abs)];
        assert_eq!(
            root_from(env(&local), true).unwrap(),
            PathBuf::from(abs).join("Gatehouse").join("scratch")
        );
        assert_eq!(
            root_from(env(&local), false).unwrap(),
            PathBuf::from(abs)
                .join(".cache")
                .join("gatehouse")
                .join("scratch")
        );
        let chosen = [("LOCALAPPDATA", abs), (ENV_SCRATCH_DIR, abs)];
        assert_eq!(root_from(env(&chosen), true).unwrap(), PathBuf::from(abs));
        // Windows without LOCALAPPDATA: a clear error, not HOME's folder.
        let e = root_from(env(&[("HOME", abs)]), true).unwrap_err();
        assert_eq!(e.code, codes::SCRATCH_UNSAFE);
        assert!(e.hint.is_some());
        assert!(root_from(env(&[("LOCALAPPDATA", "AppData")]), true).is_err());
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn scratch_dirs_are_removed_on_drop_and_leftovers_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, report) = ScratchRoot::open(tmp.path().join("scratch")).unwrap();
        assert!(report.removed.is_empty());
        let mode = fs::metadata(root.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let a = root.create().unwrap();
        let path = a.path().to_path_buf();
        assert!(path.is_dir());
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o700);
        // A live directory survives a sweep.
        assert!(root.sweep().unwrap().removed.is_empty());
        drop(a);
        assert!(!path.exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
        // A leftover of a dead host: directory and an unlocked lock file.
        let dead = root.path().join("c-999999-1-0");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("junk"), b"x").unwrap();
        fs::write(root.path().join("c-999999-1-0.lock"), b"").unwrap();
        let orphan = root.path().join("c-999998-1-0");
        fs::create_dir(&orphan).unwrap();
        let (_root, report) = ScratchRoot::open(root.path()).unwrap();
        let mut removed = report.removed.clone();
        removed.sort();
        assert_eq!(removed, vec![orphan.clone(), dead.clone()]);
        assert!(!dead.exists() && !orphan.exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn symlinked_scratch_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir_all(victim.join("precious")).unwrap();
        let link = tmp.path().join("scratch");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = ScratchRoot::open(&link).unwrap_err();
        assert_eq!(err.code, codes::SCRATCH_UNSAFE);
        assert!(victim.join("precious").is_dir());
    }

    #[test]
    fn only_scratch_entries_are_recognised() {
        for ours in [
            "c-12-1733-0",
            "c-12-1733-0.lock",
            "c-12-1733-0.json",
            "c-12-1733-0.dead.json",
            "c-12-1733-0.lock.tmp",
            "c-12-1733-0.json.tmp",
        ] {
            assert!(is_scratch_entry(ours), "{ours}");
        }
        for theirs in [
            "site",
            "c-1-2",
            "c-1-2-3-4",
            "c-a-2-3",
            ".bashrc",
            "c--1-2",
            "gatehouse.db",
        ] {
            assert!(!is_scratch_entry(theirs), "{theirs}");
        }
    }

    /// A root pointed at a folder that holds other things (a home, a folder
    /// of sites) is refused before anything in it is swept or re-moded.
    #[test]
    fn a_root_holding_other_files_is_refused_and_left_as_it_was() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs::create_dir_all(home.join("my-site")).unwrap();
        fs::write(home.join("notes.txt"), b"keep").unwrap();
        fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
        let e = ScratchRoot::open(&home).unwrap_err();
        assert_eq!(e.code, codes::SCRATCH_UNSAFE, "{e:?}");
        assert!(e.message.contains("is not Gatehouse scratch"), "{e:?}");
        assert!(home.join("my-site").is_dir());
        assert!(home.join("notes.txt").is_file());
        assert_eq!(
            fs::metadata(&home).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    /// A chain of `depth` folders under `top`, made bottom-up (each step is
    /// one rename, as an attack run's server made 30,000 in seconds).
    fn deep_tree(top: &Path, depth: usize) {
        fs::create_dir(top.join("c0")).unwrap();
        for i in 1..depth {
            fs::create_dir(top.join(format!("c{i}"))).unwrap();
            fs::rename(top.join(format!("c{}", i - 1)), top.join(format!("c{i}/a"))).unwrap();
        }
    }

    /// The standard library's recursive removal overflowed the tearing-down
    /// thread's stack on a deep tree (the host aborted); this one holds one
    /// folder open at a time, on a thread with a small stack to prove it.
    #[test]
    fn a_tree_deeper_than_any_stack_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("scratch-dir");
        fs::create_dir(&top).unwrap();
        deep_tree(&top, 5000);
        fs::write(top.join("file"), b"x").unwrap();
        let path = top.clone();
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || remove_any(&path).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert!(!top.exists());
    }

    /// Deeper than [`MAX_DEPTH`] cannot be measured, which the watchdog
    /// counts as over quota.
    #[test]
    fn a_tree_too_deep_to_measure_has_no_usage() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, _) = ScratchRoot::open(tmp.path().join("scratch")).unwrap();
        let dir = root.create().unwrap();
        fs::create_dir(dir.path().join("top")).unwrap();
        deep_tree(&dir.path().join("top"), 10);
        assert!(dir.usage_bytes().is_some());
        fs::create_dir(dir.path().join("deep")).unwrap();
        deep_tree(&dir.path().join("deep"), MAX_DEPTH + 1);
        assert_eq!(dir.usage_bytes(), None);
    }

    #[test]
    fn symlinked_scratch_entry_is_unlinked_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir_all(victim.join("precious")).unwrap();
        let (root, _) = ScratchRoot::open(tmp.path().join("scratch")).unwrap();
        // A dead run whose directory was replaced by a link, and a stray link.
        std::os::unix::fs::symlink(&victim, root.path().join("c-1-1-0")).unwrap();
        fs::write(root.path().join("c-1-1-0.lock"), b"").unwrap();
        std::os::unix::fs::symlink(&victim, root.path().join("c-2-1-0")).unwrap();
        root.sweep().unwrap();
        assert!(victim.join("precious").is_dir());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
