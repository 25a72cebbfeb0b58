//! The anchor: the newest checkpoint this machine signed of a site, kept
//! beside the key so deleting checkpoint rows does not help an attacker; and
//! what this process remembers of anchors (the last seq, when it last tried
//! one, the newest entry that found one due, paths, writes running).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{Exported, export_json};
use crate::host_env::config_dir;
use crate::secret_store::{owner_only_dir, owner_only_file};
use crate::site::Site;
use crate::store::checkpoints::CheckpointRow;
use crate::sync::lock;

const ANCHOR_DIR: &str = "audit-anchors";

/// Where this machine keeps its newest checkpoint of `site`.
pub(super) fn anchor_path(config: &Path, site: &Site) -> PathBuf {
    let dir = std::fs::canonicalize(&site.dir).unwrap_or_else(|_| site.dir.clone());
    let id = Sha256::digest(format!("{}\n{}", dir.display(), site.store.shown_url()));
    config
        .join(ANCHOR_DIR)
        .join(format!("{}.json", &hex::encode(id)[..32]))
}

/// The anchor at `path` for those who must not pass over a damaged one
/// (verify, and a checkpoint about to replace it): `Err` says why it cannot
/// be read, where [`read_anchor`] logs and goes on as if there were none (an
/// appended byte had made verify pass without it, and the next checkpoint
/// replace it).
pub(super) fn read_anchor_checked(
    path: &Path,
) -> std::result::Result<Option<CheckpointRow>, String> {
    match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
        Ok(text) => serde_json::from_str::<Exported>(&text)
            .map(|e| Some(e.checkpoint))
            .map_err(|e| e.to_string()),
    }
}

/// Moves the anchor at `path` aside (to `….json.replaced-<ms>`), if there is
/// one: a new site in a folder that held another has a chain of its own.
pub(super) fn set_aside(path: &Path) -> std::io::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".replaced-{}", crate::time::now_ms()));
    let aside = PathBuf::from(aside);
    std::fs::rename(path, &aside)?;
    Ok(Some(aside))
}

pub(super) fn read_anchor(path: &Path) -> Option<CheckpointRow> {
    read_anchor_checked(path).unwrap_or_else(|error| {
        tracing::warn!(path = %path.display(), %error, "ignoring an unreadable audit anchor");
        None
    })
}

/// Replaces the anchor when `row` is newer (write to a temp file, then rename).
///
/// Under an exclusive lock on a file beside the anchors, so that two writers
/// (two servers of this machine on one site share its anchor) cannot both
/// find theirs newer and leave the older one in place.
pub(super) fn write_anchor(path: &Path, row: &CheckpointRow) -> std::io::Result<()> {
    let dir = path.parent().expect("anchors live in a directory");
    std::fs::create_dir_all(dir)?;
    owner_only_dir(dir)?;
    let lock = owner_only_file(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(dir.join(".lock"))?;
    lock_briefly(&lock)?;
    if read_anchor(path).is_some_and(|old| old.seq >= row.seq) {
        return Ok(());
    }
    // Unique per write: two checkpoints of one process must not share a file.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".anchor.{}.{n}.tmp", std::process::id()));
    let mut f = owner_only_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(&tmp)?;
    f.write_all(export_json(row).as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
    // The lock goes with `lock`, closed on return.
}

/// Takes `file`'s exclusive lock, waiting at most a few seconds for another
/// process that holds it (a write is an fsync long): a process stopped while
/// holding it must not stall this one's checkpoints, or its shutdown, for
/// good. Where the file system has no locks (some network and FUSE mounts)
/// the write goes ahead without one, as it did before locks were taken.
fn lock_briefly(file: &std::fs::File) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "another process has held the audit anchors' lock for 5 s",
                ));
            }
            Err(std::fs::TryLockError::Error(e)) if unsupported(&e) => {
                tracing::debug!(error = %e, "no file locks here; writing the audit anchor without one");
                return Ok(());
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// A file system that cannot lock files.
fn unsupported(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(nix::libc::ENOLCK) {
        return true;
    }
    e.kind() == std::io::ErrorKind::Unsupported
}

/// What this process knows of each anchor's checkpoints, so the server need
/// not read the database after every entry to know when the next is due.
static LAST: Mutex<Option<HashMap<PathBuf, Last>>> = Mutex::new(None);

#[derive(Clone, Copy)]
struct Last {
    /// The newest checkpoint's seq.
    seq: i64,
    /// When this process last tried to write one, whether or not it could.
    tried: Option<Instant>,
    /// The newest entry that found a checkpoint due.
    due: i64,
}

/// `f` applied to `anchor`'s record (read from the anchor on first use).
fn with_last<T>(anchor: &Path, f: impl FnOnce(&mut Last) -> T) -> T {
    let mut guard = lock(&LAST);
    let map = guard.get_or_insert_with(HashMap::new);
    // Every call asks: found without a copy of the path.
    if let Some(last) = map.get_mut(anchor) {
        return f(last);
    }
    let last = map.entry(anchor.to_path_buf()).or_insert_with(|| {
        let seq = read_anchor(anchor).map_or(0, |a| a.seq);
        Last {
            seq,
            tried: None,
            due: seq,
        }
    });
    f(last)
}

pub(super) fn last_seq(anchor: &Path) -> i64 {
    with_last(anchor, |l| l.seq)
}

/// Whether the entry `seq` is `every` entries past the newest checkpoint;
/// if so, notes that it found one due. One look for what every call asks.
pub(super) fn note_due(anchor: &Path, seq: i64, every: i64) -> bool {
    with_last(anchor, |l| {
        let is_due = seq - l.seq >= every;
        if is_due {
            l.due = l.due.max(seq);
        }
        is_due
    })
}

/// The newest entry that found a checkpoint due.
pub(super) fn due(anchor: &Path) -> i64 {
    with_last(anchor, |l| l.due)
}

/// How long from now until `spacing` has passed since this process last
/// tried to write `anchor`'s checkpoint (zero if it has, or never tried).
pub(super) fn wait_for_spacing(anchor: &Path, spacing: Duration) -> Duration {
    with_last(anchor, |l| l.tried).map_or(Duration::ZERO, |at| spacing.saturating_sub(at.elapsed()))
}

/// Notes a checkpoint of `seq` written (`None`: an attempt that failed).
pub(super) fn set_tried(anchor: &Path, seq: Option<i64>) {
    with_last(anchor, |l| {
        l.seq = l.seq.max(seq.unwrap_or(0));
        l.tried = Some(Instant::now());
    });
}

/// [`anchor_path`] under [`config_dir`], remembered per site folder and URL.
///
/// Asked by every call: found by comparing the site's folder and database
/// URL with the few sites this process opened, without copying either.
pub(super) fn cached_anchor_path(site: &Site) -> Option<Arc<Path>> {
    static ANCHORS: Mutex<Vec<(PathBuf, String, Arc<Path>)>> = Mutex::new(Vec::new());
    let url = site.store.shown_url();
    if let Some((_, _, path)) = lock(&ANCHORS)
        .iter()
        .find(|(dir, u, _)| *dir == site.dir && u == url)
    {
        return Some(path.clone());
    }
    let path: Arc<Path> = anchor_path(&config_dir().ok()?, site).into();
    lock(&ANCHORS).push((site.dir.clone(), url.to_string(), path.clone()));
    Some(path)
}

/// The anchors whose checkpoint this process is writing now (a few at most).
static RUNNING: Mutex<Vec<Arc<Path>>> = Mutex::new(Vec::new());

/// A claim on writing one anchor's checkpoint, released on drop.
pub(super) struct Running(Arc<Path>);

impl Running {
    /// Asked by every call while a checkpoint is due: one that runs already
    /// is found without copying or hashing the path.
    pub(super) fn claim(anchor: &Arc<Path>) -> Option<Running> {
        let mut running = lock(&RUNNING);
        // `Arc`'s equality compares the pointers before the paths.
        if running.contains(anchor) {
            return None;
        }
        running.push(anchor.clone());
        Some(Running(anchor.clone()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&RUNNING).retain(|a| !Arc::ptr_eq(a, &self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64) -> CheckpointRow {
        CheckpointRow {
            seq,
            hash: format!("{seq:064x}"),
            ts: seq,
            public_key: String::new(),
            signature: String::new(),
        }
    }

    /// A writer that holds the lock and never lets go (a process stopped in
    /// its write) costs another writer seconds, not its checkpoints for good.
    #[test]
    fn a_lock_held_for_good_fails_the_write_in_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchors").join("site.json");
        write_anchor(&path, &row(1)).unwrap();
        let held = std::fs::File::open(path.with_file_name(".lock")).unwrap();
        held.lock().unwrap();
        let started = Instant::now();
        let e = write_anchor(&path, &row(2)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(read_anchor(&path).unwrap().seq, 1);
        drop(held);
        write_anchor(&path, &row(2)).unwrap();
        assert_eq!(read_anchor(&path).unwrap().seq, 2);
    }

    /// Writers that race (two servers of one machine on one site share its
    /// anchor) never leave an older checkpoint in place of a newer one.
    #[test]
    fn racing_writers_never_move_the_anchor_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchors").join("site.json");
        for round in 0..5 {
            let base = round * 1000;
            std::thread::scope(|s| {
                for t in 0..4 {
                    let path = &path;
                    s.spawn(move || {
                        // Each writer a different order: newest first, oldest first...
                        for i in 0..20 {
                            let seq = match t % 2 {
                                0 => base + 20 - i,
                                _ => base + 1 + i,
                            };
                            write_anchor(path, &row(seq * 4 + t)).unwrap();
                        }
                    });
                }
            });
            let kept = read_anchor(&path).unwrap().seq;
            assert_eq!(kept, (base + 20) * 4 + 3, "round {round}");
        }
    }
}
