//! The per-call hot path on a SQLite file: the handful of statements every
//! tool call makes (the access generation, the entry `content_read` serves
//! with its pending revision, the audit group commit), run in place on rusqlite
//! connections instead of as sqlx statements.
//!
//! Why: an sqlx SQLite statement is a round trip to the connection's worker
//! thread and back; a `content_read` call made eight of them, and the thread
//! hand-offs, not SQLite, were its ~1 ms (docs/decisions.md, "Server hot path").
//! Here a read runs on the caller's thread in microseconds, and a group commit
//! is one transaction on the caller's thread too.
//!
//! The rules of [`super`] still hold: one writer per process (whoever writes
//! to a file holds its write gate, [`gate_for`], so the sqlx writer and the
//! one here never meet SQLite's busy handler), and the chain
//! is appended under the write lock in one transaction. Another process holding
//! the lock is the one case that waits: the commit then moves to a blocking
//! thread with the usual busy timeout, never stalling the async runtime.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::audit::{CHAIN_HEAD, NewAuditRow, RECORD_HOUR, entry_hash};
use super::content::Entry;
use super::content_pending::Pending;
use crate::error::{Error, Result};
use crate::sync::lock;

/// How long a commit waits for another process's write lock (as the sqlx pools do).
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);
/// Reader connections kept for reuse; more may be open while calls overlap.
const KEPT_READERS: usize = 4;
/// Group commits between two checkpoints of the WAL into the database file.
const CHECKPOINT_EVERY: u32 = 128;
/// The WAL's size past which a checkpoint makes sure it starts over, and to
/// which it is cut when it does: some eight checkpoint cycles of one-call commits.
const WAL_KEPT_BYTES: i64 = 16 << 20;
/// How long the `audit_head` row may stay behind the group commits, which
/// leave it (`store::audit::CHAIN_HEAD`): one page written per this long of
/// calls, not per call.
pub(crate) const HEAD_LAG: Duration = Duration::from_millis(250);
/// Moves the `audit_head` row up to the last entry, unless the chain no
/// longer holds the entry it records (then `audit verify` names that). A
/// signed checkpoint runs it too (`store::checkpoints::insert`).
pub(crate) const MOVE_HEAD: &str = "UPDATE audit_head SET seq = l.seq, hash = l.hash
    FROM (SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1) AS l
    WHERE audit_head.id = 1 AND audit_head.seq < l.seq
      AND (audit_head.seq = 0 OR EXISTS (SELECT 1 FROM audit_log e
           WHERE e.seq = audit_head.seq AND e.hash = audit_head.hash))";

/// Direct connections to one SQLite database file.
pub(crate) struct Direct {
    path: PathBuf,
    readers: Mutex<Vec<Connection>>,
    writer: Mutex<Writer>,
    /// One permit per database file in this process ([`gate_for`]): whoever
    /// writes holds it (sqlx write transactions and the group commit alike).
    gate: Arc<tokio::sync::Semaphore>,
    /// Commits since the last WAL checkpoint, and whether one is running.
    commits: std::sync::atomic::AtomicU32,
    checkpointing: std::sync::atomic::AtomicBool,
    /// Group commits that found the file locked by another process.
    pub(crate) lock_waits: std::sync::atomic::AtomicU64,
    /// The file opened (its device and inode on Unix), to tell when the path
    /// no longer names it ([`Direct::still_the_file`]).
    identity: Option<(u64, u64)>,
    /// Whether a move of the `audit_head` row is scheduled ([`Direct::after_append`]).
    head_moving: std::sync::atomic::AtomicBool,
    /// Whether this process appended since the row last moved.
    head_behind: std::sync::atomic::AtomicBool,
    /// Whether reads may share a snapshot ([`Direct::share_reads_between_arrivals`]).
    sharing: AtomicBool,
    /// Moved by every arrival ([`Direct::arrived`]) and every release of the
    /// write gate: a snapshot taken at an older epoch serves no more reads.
    epoch: Arc<AtomicU64>,
    /// Whether a task that ends the open snapshot is queued.
    closer_queued: AtomicBool,
}

/// The writer's connection, and the epoch of the read transaction left open
/// on it for reads that share one, if one is.
#[derive(Default)]
struct Writer {
    conn: Option<Connection>,
    snapshot: Option<Snapshot>,
    /// The chain head this connection's last group commit left ([`append_in`]).
    head: Option<KnownHead>,
}

/// A read transaction left open on the writer's connection for reads that
/// share it ([`Direct::shared_read`]).
struct Snapshot {
    /// The epoch it was begun at: it serves no read asked for at a later one.
    epoch: u64,
    /// The access generation read in it: every call asks, and in one
    /// snapshot the answer cannot change.
    generation: Option<i64>,
}

/// The last entry a group commit wrote, and the connection's
/// `PRAGMA data_version` then: while that is unchanged, no other connection
/// has committed since, and the entry is still the chain's head.
struct KnownHead {
    data_version: i64,
    seq: i64,
    hash: String,
}

impl Writer {
    /// Ends the shared read transaction, if one is open.
    fn end_snapshot(&mut self) {
        if self.snapshot.take().is_some()
            && let Some(conn) = &self.conn
            && !conn.is_autocommit()
        {
            let ended = conn
                .prepare_cached("COMMIT")
                .and_then(|mut c| c.execute([]));
            if ended.is_err() {
                let _ = conn.execute_batch("ROLLBACK");
            }
        }
    }
}

/// This process's write gate on one file, held: its release moves the epoch,
/// so reads after a write of this process never share a snapshot older than it.
pub(crate) struct WriteGate {
    _permit: tokio::sync::OwnedSemaphorePermit,
    epoch: Arc<AtomicU64>,
}

impl Drop for WriteGate {
    fn drop(&mut self) {
        self.epoch.fetch_add(1, Ordering::Release);
    }
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").field("path", &self.path).finish()
    }
}

/// A file's device and inode (Unix); `None` elsewhere, where the path's
/// presence alone is checked.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Keep each cached statement's plan: without the query planner stability
    // guarantee, rebinding a parameter the planner looked at (every slug)
    // recompiles the statement on its next step, a third of a call's CPU.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    // The same settings as the sqlx pools' (`store::prepare`); WAL is a
    // property of the file, set when it was migrated.
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    // Never checkpoint the WAL inside a commit (an fsync or two in some
    // caller's answer): `Direct::after_commit` does it aside.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // A WAL that grew while a long read held its copy back is cut back to
    // this when it next starts over (SQLite keeps it at its largest).
    conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)?;
    Ok(conn)
}

/// The connection in `slot`, opened on first use.
fn opened<'a>(
    slot: &'a mut Option<Connection>,
    path: &Path,
    context: &str,
) -> Result<&'a mut Connection> {
    if slot.is_none() {
        *slot = Some(open(path).map_err(|e| storage(context, e))?);
    }
    Ok(slot.as_mut().expect("opened above"))
}

fn storage(context: &str, e: rusqlite::Error) -> Error {
    Error::storage(context, e)
}

/// The write gate of the database file `path`: one per file in this process,
/// shared by every store opened on it.
pub(crate) fn gate_for(path: &Path) -> Arc<tokio::sync::Semaphore> {
    static GATES: Mutex<Vec<(PathBuf, std::sync::Weak<tokio::sync::Semaphore>)>> =
        Mutex::new(Vec::new());
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut gates = lock(&GATES);
    gates.retain(|(_, g)| g.strong_count() > 0);
    if let Some(gate) = gates
        .iter()
        .find(|(p, _)| *p == key)
        .and_then(|(_, g)| g.upgrade())
    {
        return gate;
    }
    let gate = Arc::new(tokio::sync::Semaphore::new(1));
    gates.push((key, Arc::downgrade(&gate)));
    gate
}

impl Direct {
    /// Direct access to the database file `path`, if it is one (an in-memory
    /// database cannot be shared with a second connection).
    pub(crate) fn for_file(path: &Path) -> Option<Arc<Direct>> {
        path.is_file().then(|| {
            Arc::new(Direct {
                path: path.to_path_buf(),
                readers: Mutex::new(Vec::new()),
                writer: Mutex::new(Writer::default()),
                gate: gate_for(path),
                commits: Default::default(),
                checkpointing: Default::default(),
                lock_waits: Default::default(),
                identity: file_identity(path),
                head_moving: Default::default(),
                head_behind: Default::default(),
                sharing: Default::default(),
                epoch: Default::default(),
                closer_queued: Default::default(),
            })
        })
    }

    /// Whether the path still names the file opened: renamed away or
    /// deleted, the connections here go on with the old file while nothing
    /// new can open it (`/readyz` says so).
    pub(crate) fn still_the_file(&self) -> bool {
        self.path.is_file() && file_identity(&self.path) == self.identity
    }

    /// Lets the reads of [`Direct::shared_read`] share one read transaction
    /// while nothing arrives, for a server that calls [`Direct::arrived`] for
    /// every request before it reads on its behalf (the stdio server).
    ///
    /// Why: each read transaction takes and drops a lock on the WAL's shared
    /// memory, two `fcntl` calls; with 16 calls in flight those were a sixth
    /// of a call's CPU (docs/decisions.md, "Reads share a snapshot between
    /// arrivals"). A snapshot begun after a request arrived holds every commit
    /// made before it (a revocation, a narrowed scope), so serving that
    /// request from it is as fresh as a read of its own.
    pub(crate) fn share_reads_between_arrivals(&self) {
        self.sharing.store(true, Ordering::Relaxed);
    }

    /// A request arrived: reads on its behalf take a snapshot begun after this.
    pub(crate) fn arrived(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// Runs `read` in place, on the writer's connection if it is free, else on
    /// a reader's. In WAL mode a reader never waits for a writer.
    fn read<T>(
        &self,
        context: &str,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        // The writer's connection when it is free: its page cache holds what
        // it last wrote, so the read needs no pages from the disk or the WAL.
        if let Ok(mut slot) = self.writer.try_lock() {
            // Never inside a shared snapshot: these reads want the latest commit.
            slot.end_snapshot();
            let conn = opened(&mut slot.conn, &self.path, context)?;
            return read(conn).map_err(|e| storage(context, e));
        }
        self.read_aside(context, read)
    }

    /// [`Direct::read`], in the snapshot the reads since the last arrival
    /// share when the server asked for that
    /// ([`Direct::share_reads_between_arrivals`]); the snapshot ends when the
    /// next arrival or write of this process needs a newer one, or when the
    /// tasks queued on this runtime have run ([`Direct::queue_closer`]), so
    /// it never outlives a busy moment and holds no WAL frame back.
    fn shared_read<T>(
        self: &Arc<Self>,
        context: &str,
        read: impl FnOnce(&Connection, Option<&mut Snapshot>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        if !self.sharing.load(Ordering::Relaxed) {
            return self.read(context, |c| read(c, None));
        }
        let Ok(mut slot) = self.writer.try_lock() else {
            return self.read_aside(context, |c| read(c, None));
        };
        let epoch = self.epoch.load(Ordering::Acquire);
        if slot.snapshot.as_ref().map(|s| s.epoch) != Some(epoch) {
            slot.end_snapshot();
            // A snapshot needs a runtime to queue its end on.
            if tokio::runtime::Handle::try_current().is_ok() {
                let conn = opened(&mut slot.conn, &self.path, context)?;
                // Deferred: the snapshot is taken by the first read, after
                // the epoch was read.
                if conn
                    .prepare_cached("BEGIN")
                    .and_then(|mut b| b.execute([]))
                    .is_ok()
                {
                    slot.snapshot = Some(Snapshot {
                        epoch,
                        generation: None,
                    });
                    self.queue_closer();
                }
            }
        }
        let Writer { conn, snapshot, .. } = &mut *slot;
        let conn = opened(conn, &self.path, context)?;
        let out = read(conn, snapshot.as_mut()).map_err(|e| storage(context, e));
        if out.is_err() {
            slot.end_snapshot();
        }
        out
    }

    /// Queues a task that ends the shared snapshot: it runs once the tasks
    /// queued before it (the calls that arrived together, and their group
    /// commit) have run.
    fn queue_closer(self: &Arc<Self>) {
        if self.closer_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let direct = self.clone();
        tokio::spawn(async move {
            // After the runtime's next look at its I/O: by then the group
            // commit woken by these calls has run, and made the snapshot its
            // write ([`Direct::write`]).
            tokio::task::yield_now().await;
            // Cleared first: a snapshot begun from here on queues its own end.
            direct.closer_queued.store(false, Ordering::Release);
            loop {
                if let Ok(mut slot) = direct.writer.try_lock() {
                    slot.end_snapshot();
                    return;
                }
                // A read on another thread, or a commit waiting for another
                // process (which ends the snapshot itself).
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
    }

    /// Runs `read` on a reader connection, never the writer's.
    fn read_aside<T>(
        &self,
        context: &str,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let taken = lock(&self.readers).pop();
        let conn = match taken {
            Some(conn) => conn,
            None => open(&self.path).map_err(|e| storage(context, e))?,
        };
        let out = read(&conn).map_err(|e| storage(context, e));
        let mut kept = lock(&self.readers);
        if kept.len() < KEPT_READERS {
            kept.push(conn);
        }
        out
    }

    /// Closes every connection (they reopen on next use), so that closing the
    /// store lets SQLite checkpoint and remove its WAL.
    pub(crate) fn close(&self) {
        lock(&self.readers).clear();
        let mut writer = lock(&self.writer);
        writer.end_snapshot();
        writer.conn = None;
        writer.head = None;
    }

    pub(crate) fn generation(self: &Arc<Self>) -> Result<i64> {
        self.shared_read("reading the access generation", |c, snapshot| {
            if let Some(known) = snapshot.as_ref().and_then(|s| s.generation) {
                return Ok(known);
            }
            let read = c
                .prepare_cached("SELECT gen FROM access_generation WHERE id = 1")?
                .query_row([], |r| r.get(0))?;
            if let Some(s) = snapshot {
                s.generation = Some(read);
            }
            Ok(read)
        })
    }

    /// `store::content::by_slug`'s statement (passed in, so it exists once):
    /// the entry and its pending revision, if any; with `named`, also the
    /// statement's `author_name` column (`store::content::by_slug_named`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn content_by_slug(
        self: &Arc<Self>,
        sql: &str,
        slug: &str,
        named: bool,
    ) -> Result<Option<(Entry, Option<Pending>, Option<Option<String>>)>> {
        self.shared_read("reading content", |c, _| {
            c.prepare_cached(sql)?
                .query_row([slug], |r| {
                    let entry = Entry {
                        id: r.get(0)?,
                        slug: r.get(1)?,
                        title: r.get(2)?,
                        body: r.get(3)?,
                        status: r.get(4)?,
                        author: r.get(5)?,
                        created_at: r.get(6)?,
                        updated_at: r.get(7)?,
                        published_at: r.get(8)?,
                    };
                    let pending = match r.get::<_, Option<String>>(9)? {
                        Some(title) => Some(Pending {
                            title,
                            body: r.get(10)?,
                            author: r.get(11)?,
                            created_at: r.get(12)?,
                            updated_at: r.get(13)?,
                        }),
                        None => None,
                    };
                    let name = if named {
                        Some(r.get::<_, Option<String>>(14)?)
                    } else {
                        None
                    };
                    Ok((entry, pending, name))
                })
                .optional()
        })
    }

    /// A statement with one text parameter that returns at most one row of
    /// one nullable text column (`None`: no row, or NULL).
    pub(crate) fn optional_text(
        self: &Arc<Self>,
        context: &str,
        sql: &str,
        param: &str,
    ) -> Result<Option<String>> {
        self.shared_read(context, |c, _| {
            c.prepare_cached(sql)?
                .query_row([param], |r| r.get::<_, Option<String>>(0))
                .optional()
                .map(Option::flatten)
        })
    }

    /// The committed chain head (`store::audit::committed_head`'s statement).
    pub(crate) fn head(&self, sql: &str) -> Result<(i64, String)> {
        self.read("reading the audit head", |c| {
            c.prepare_cached(sql)?
                .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        })
    }

    /// `store::checkpoints::entry_hash`'s statement.
    pub(crate) fn stored_hash(&self, sql: &str, seq: i64) -> Result<Option<String>> {
        self.read("reading the audit log", |c| {
            c.prepare_cached(sql)?
                .query_row([seq], |r| r.get(0))
                .optional()
        })
    }

    /// Runs `write` in one transaction on the writer's connection. The caller
    /// holds the process's write gate (see the module doc). With `wait`,
    /// another process's write lock is waited for with the usual busy timeout
    /// (a caller on a thread that may block); without it, `None` comes back at
    /// once without writing, and a caller on the async runtime then waits on a
    /// blocking thread.
    pub(crate) fn write<T>(
        &self,
        context: &str,
        wait: bool,
        write: impl FnMut(&Connection) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        write_locked(&mut lock(&self.writer), &self.path, context, wait, write)
    }

    /// Appends `entries` stamped `ts` in one transaction, recording `hour`
    /// when given ([`RECORD_HOUR`]), and returns their seqs once it
    /// committed, as [`Direct::write`] does with `wait`.
    pub(crate) fn append(
        &self,
        entries: &[NewAuditRow],
        ts: i64,
        hour: Option<i64>,
        wait: bool,
    ) -> Result<Option<Vec<i64>>> {
        let mut slot = lock(&self.writer);
        // Known again only once this commit is.
        let known = slot.head.take();
        let mut left = None;
        let written = write_locked(
            &mut slot,
            &self.path,
            "committing audit entries",
            wait,
            |tx| {
                let (seqs, head) = append_in(tx, entries, ts, hour, known.as_ref())?;
                left = Some(head);
                Ok(seqs)
            },
        );
        if let Ok(Some(_)) = written {
            slot.head = left;
        }
        written
    }
}

/// [`Direct::write`] on the writer's connection, locked by the caller.
fn write_locked<T>(
    slot: &mut Writer,
    path: &Path,
    context: &str,
    wait: bool,
    mut write: impl FnMut(&Connection) -> rusqlite::Result<T>,
) -> Result<Option<T>> {
    // The reads' snapshot, still open, becomes the write: SQLite takes the
    // write lock at its first change only if no connection committed since
    // the snapshot began, so what the write reads in it is the latest. One
    // read transaction fewer per group commit (two `fcntl` calls on the
    // shared memory); when another connection did commit, or holds the
    // lock, the write starts over in a transaction of its own.
    let in_open_snapshot =
        slot.snapshot.take().is_some() && slot.conn.as_ref().is_some_and(|c| !c.is_autocommit());
    let conn = opened(&mut slot.conn, path, context)?;
    conn.busy_timeout(if wait { BUSY_TIMEOUT } else { Duration::ZERO })
        .map_err(|e| storage(context, e))?;
    let written = if in_open_snapshot {
        match in_open_transaction(conn, &mut write) {
            Err(e) if is_busy(&e) => immediate(conn, write),
            written => written,
        }
    } else {
        immediate(conn, write)
    };
    // Reads share this connection: they get the usual timeout back.
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| storage(context, e))?;
    match written {
        Ok(out) => Ok(Some(out)),
        Err(e) if !wait && is_busy(&e) => Ok(None),
        Err(e) => Err(storage(context, e)),
    }
}

impl Direct {
    /// Counts a commit; every [`CHECKPOINT_EVERY`] of them copies the WAL
    /// into the database file on a blocking thread and a reader connection
    /// (a passive checkpoint: it never blocks readers or writers).
    ///
    /// Only a WAL copied to its last frame starts over from its beginning at
    /// the next commit; one copied only while commits keep coming never does,
    /// and grows by every commit's pages (tens of MB a second under load). So
    /// once it passes [`WAL_KEPT_BYTES`], a second checkpoint runs with this
    /// process's writers held at the write gate, copying what they appended meanwhile:
    /// a pause of an fsync or two for the calls committing then, once per
    /// that many bytes of WAL, not once per checkpoint.
    pub(crate) fn after_commit(self: &Arc<Self>) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.commits.fetch_add(1, Relaxed) + 1 < CHECKPOINT_EVERY
            || self.checkpointing.swap(true, Relaxed)
        {
            return;
        }
        self.commits.store(0, Relaxed);
        let direct = self.clone();
        tokio::spawn(async move {
            direct.clone().checkpoint().await;
            if direct.wal_bytes() > WAL_KEPT_BYTES as u64 {
                let _held = direct.write_gate().await;
                direct.clone().checkpoint().await;
            }
            direct.checkpointing.store(false, Relaxed);
        });
    }

    /// After a group commit: the `audit_head` row follows it within
    /// [`HEAD_LAG`], through the write gate (one move per lag, however many
    /// commits came meanwhile), so a tail cut from a crashed server's calls
    /// is named by `audit verify` as one from any other writer's, all but
    /// the last lag's.
    pub(crate) fn after_append(self: &Arc<Self>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.head_behind.store(true, Relaxed);
        if self.head_moving.swap(true, Relaxed) {
            return;
        }
        let direct = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(HEAD_LAG).await;
            // Commits from here on schedule the next move.
            direct.head_moving.store(false, Relaxed);
            let _held = direct.write_gate().await;
            direct.move_head();
        });
    }

    /// [`MOVE_HEAD`] now if this process appended since the row last moved,
    /// unless another process holds the write lock (its commits move the row,
    /// or schedule their own move). The caller holds the write gate.
    pub(crate) fn move_head(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.head_behind.swap(false, Relaxed) {
            return;
        }
        let moved = self.write("moving the audit head", false, |tx| {
            tx.prepare_cached(MOVE_HEAD)?.execute([])
        });
        match moved {
            Ok(Some(_)) => {}
            Ok(None) => self.head_behind.store(true, Relaxed),
            Err(e) => {
                self.head_behind.store(true, Relaxed);
                tracing::warn!(code = %e.code, message = %e.message, "moving the audit head failed");
            }
        }
    }

    /// Waits for this file's write gate.
    pub(crate) async fn write_gate(&self) -> WriteGate {
        WriteGate {
            _permit: self
                .gate
                .clone()
                .acquire_owned()
                .await
                .expect("the gate is never closed"),
            epoch: self.epoch.clone(),
        }
    }

    /// The WAL file's size now (0 when there is none).
    fn wal_bytes(&self) -> u64 {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        std::fs::metadata(wal).map_or(0, |m| m.len())
    }

    /// One passive checkpoint (it never blocks readers or writers), aside.
    async fn checkpoint(self: Arc<Self>) {
        let done = tokio::task::spawn_blocking(move || {
            self.read_aside("checkpointing the WAL", |c| {
                c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            })
        })
        .await;
        if let Ok(Err(e)) = done {
            tracing::warn!(code = %e.code, message = %e.message, "WAL checkpoint failed");
        }
    }
}

/// Runs `write` in one `BEGIN IMMEDIATE` transaction on `conn`, committed
/// when it succeeds and rolled back when anything fails, as rusqlite's
/// `Transaction` does; but `BEGIN` and `COMMIT` are cached statements here,
/// where `Transaction` parses both again for every commit.
fn immediate<T>(
    conn: &Connection,
    write: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    in_open_transaction(conn, write)
}

/// Runs `write` in the transaction open on `conn` (a `BEGIN IMMEDIATE`, or
/// the reads' snapshot) and commits it; rolls back when anything fails, what
/// the transaction read before included.
fn in_open_transaction<T>(
    conn: &Connection,
    write: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let _rollback = RollbackUnlessCommitted(conn);
    let out = write(conn)?;
    conn.prepare_cached("COMMIT")?.execute([])?;
    Ok(out)
}

/// Whether `e` is SQLite's busy (`SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`…).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseBusy)
}

/// Rolls back what is left of a transaction (an error, a failed `COMMIT`, a
/// panic), so the connection never keeps the write lock.
struct RollbackUnlessCommitted<'a>(&'a Connection);

impl Drop for RollbackUnlessCommitted<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// [`Direct::append`]'s transaction: the chain's head read under the write
/// lock, the rows chained onto it, their `hour` recorded when given,
/// committed. Dropped uncommitted on any error, so nothing of it stays. The
/// `audit_head` row is left where it is: a page written by every call, for a
/// record that follows within [`HEAD_LAG`] (`store::audit::CHAIN_HEAD`).
///
/// The head is read only when `known` (what this connection's last commit
/// left) may be stale: when another connection committed since, which
/// `PRAGMA data_version` tells without reading a page.
fn append_in(
    tx: &Connection,
    entries: &[NewAuditRow],
    ts: i64,
    hour: Option<i64>,
    known: Option<&KnownHead>,
) -> rusqlite::Result<(Vec<i64>, KnownHead)> {
    let data_version: i64 = tx
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?;
    let (mut seq, mut prev): (i64, String) = match known {
        Some(k) if k.data_version == data_version => (k.seq, k.hash.clone()),
        _ => tx
            .prepare_cached(CHAIN_HEAD)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?,
    };
    let mut seqs = Vec::with_capacity(entries.len());
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )?;
        for e in entries {
            seq += 1;
            let hash = entry_hash(seq, ts, &e.actor, &e.action, &e.subject, &e.detail, &prev);
            insert.execute(rusqlite::params![
                seq, ts, e.actor, e.action, e.subject, e.detail, prev, hash
            ])?;
            prev = hash;
            seqs.push(seq);
        }
    }
    if let (Some(hour), Some(first)) = (hour, seqs.first()) {
        tx.prepare_cached(RECORD_HOUR)?.execute([hour, *first])?;
    }
    let head = KnownHead {
        data_version,
        seq,
        hash: prev,
    };
    Ok((seqs, head))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL file holding only the access generation, and a second
    /// connection standing for another process.
    fn file() -> (tempfile::TempDir, Arc<Direct>, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.db");
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(Duration::ZERO).unwrap();
        other
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE access_generation (id INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
                 INSERT INTO access_generation VALUES (1, 1);",
            )
            .unwrap();
        let direct = Direct::for_file(&path).unwrap();
        (dir, direct, other)
    }

    fn set(other: &Connection, generation: i64) {
        other
            .execute("UPDATE access_generation SET gen = ?1", [generation])
            .unwrap();
    }

    /// Whether another connection can copy the whole WAL and start it over:
    /// not while any read transaction of ours is open.
    fn wal_restartable(other: &Connection) -> bool {
        let busy: i64 = other
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        busy == 0
    }

    #[tokio::test(flavor = "current_thread")]
    async fn reads_share_a_snapshot_only_until_the_next_arrival_or_write() {
        let (_dir, direct, other) = file();
        direct.share_reads_between_arrivals();
        direct.arrived();
        assert_eq!(direct.generation().unwrap(), 1);
        // Committed elsewhere after the snapshot began: the requests that
        // arrived before it was committed may be served without it.
        set(&other, 2);
        assert_eq!(direct.generation().unwrap(), 1);
        // A request arriving after the commit is served from a newer snapshot.
        direct.arrived();
        assert_eq!(direct.generation().unwrap(), 2);
        // So is every read after a write of this process.
        set(&other, 3);
        drop(direct.write_gate().await);
        assert_eq!(direct.generation().unwrap(), 3);
        // A read that is not shared never sees the snapshot.
        set(&other, 4);
        let unshared: i64 = direct
            .read("reading", |c| {
                c.query_row("SELECT gen FROM access_generation", [], |r| r.get(0))
            })
            .unwrap();
        assert_eq!(unshared, 4);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_shared_snapshot_ends_once_the_queued_tasks_ran() {
        let (_dir, direct, other) = file();
        direct.share_reads_between_arrivals();
        direct.arrived();
        assert_eq!(direct.generation().unwrap(), 1);
        assert!(
            !wal_restartable(&other),
            "the snapshot is open while the calls that arrived together run"
        );
        // The calls run, then their group commit, then the runtime looks at
        // its I/O and the snapshot's end runs.
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert!(
            wal_restartable(&other),
            "a snapshot left open holds the WAL back for as long as the server idles"
        );
        // Then the next read takes a new one, even with no arrival between.
        set(&other, 2);
        assert_eq!(direct.generation().unwrap(), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_in_the_reads_snapshot_starts_over_when_another_connection_committed() {
        let (_dir, direct, other) = file();
        direct.share_reads_between_arrivals();
        direct.arrived();
        assert_eq!(direct.generation().unwrap(), 1);
        let add_ten = |tx: &Connection| {
            let seen: i64 = tx.query_row("SELECT gen FROM access_generation", [], |r| r.get(0))?;
            tx.execute("UPDATE access_generation SET gen = ?1", [seen + 10])?;
            Ok(seen)
        };
        // Nothing committed elsewhere: the write goes on in the snapshot.
        assert_eq!(direct.write("adding", false, add_ten).unwrap(), Some(1));
        direct.arrived();
        assert_eq!(direct.generation().unwrap(), 11);
        // Committed elsewhere after the snapshot began: what the write read
        // there is stale, so it starts over in a transaction of its own.
        set(&other, 20);
        assert_eq!(direct.write("adding", false, add_ten).unwrap(), Some(20));
        let stored: i64 = other
            .query_row("SELECT gen FROM access_generation", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 30);
    }

    /// The head a commit left is known only to the connection that wrote
    /// it: another connection's `data_version` says nothing of its commits.
    #[tokio::test(flavor = "current_thread")]
    async fn a_reopened_connection_reads_the_chain_head_again() {
        let tmp = tempfile::tempdir().unwrap();
        let site = crate::site::init(&tmp.path().join("s"), Some("t"), false, None)
            .await
            .unwrap();
        let ours = site.store.direct().unwrap().clone();
        let theirs = Direct::for_file(&ours.path).unwrap();
        let row = |subject: &str| NewAuditRow {
            actor: "test".into(),
            action: "test".into(),
            subject: subject.into(),
            detail: "{}".into(),
        };
        let first = ours.append(&[row("a")], 1, None, true).unwrap().unwrap();
        ours.close();
        theirs.append(&[row("b")], 2, None, true).unwrap().unwrap();
        let last = ours.append(&[row("c")], 3, None, true).unwrap().unwrap();
        assert_eq!(
            last[0],
            first[0] + 2,
            "chained onto the other connection's entry"
        );
        let report = crate::access::audit::verify(&site.store).await.unwrap();
        assert!(report.ok, "{report:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn without_sharing_every_read_is_its_own() {
        let (_dir, direct, other) = file();
        assert_eq!(direct.generation().unwrap(), 1);
        set(&other, 2);
        assert_eq!(direct.generation().unwrap(), 2);
        assert!(wal_restartable(&other));
    }
}
