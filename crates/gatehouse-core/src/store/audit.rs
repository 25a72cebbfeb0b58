//! SQL for the hash-chained audit log, and its group commit.
//!
//! The chain's format (the hash of an entry, [`GENESIS`]) lives here because
//! appending computes it; `crate::access::audit` decides what is recorded and
//! verifies the chain.
//!
//! Group commit ([`record`]): entries recorded alone (a tool call's) go to one
//! committer task per store, which appends everything queued so far in one
//! transaction and only then answers each caller with its seq. The chain stays
//! gap-free (one transaction holds the head lock while it appends in order),
//! and no caller hears "recorded" before the commit that holds its entry.

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;
use tokio::sync::{mpsc, oneshot};

use super::{DatabaseKind, Store, Tx};
use crate::error::{Error, Result};

/// The `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of an entry: SHA-256 over an unambiguous JSON array of its fields.
pub fn entry_hash(
    seq: i64,
    ts: i64,
    actor: &str,
    action: &str,
    subject: &str,
    detail: &str,
    prev: &str,
) -> String {
    let canonical = serde_json::to_string(&(seq, ts, actor, action, subject, detail, prev))
        .expect("tuple serialises");
    crate::json::hex_digest(&Sha256::digest(canonical.as_bytes()))
}

/// An entry to append: seq, time and hashes are assigned when it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAuditRow {
    pub actor: String,
    pub action: String,
    pub subject: String,
    /// JSON text; never holds a secret.
    pub detail: String,
}

/// The chain's head on SQLite, what an append chains onto: the last entry,
/// or the `audit_head` row where that is further on (or level). The row is
/// the write lock and a recorded head the chain must reach; the server's
/// appends do not move it (one WAL page fewer per commit): it follows them
/// within `direct::HEAD_LAG`, and every other append moves it. After a
/// tail was cut below it, appends go on after it, so the gap stays for
/// `audit verify` to name. On PostgreSQL every append moves the row, which
/// is the head there ([`head_sql`]).
pub(crate) const CHAIN_HEAD: &str = "SELECT seq, hash FROM (
        SELECT seq, hash, 1 AS recorded FROM audit_head WHERE id = 1
        UNION ALL
        SELECT seq, hash, 0 AS recorded
        FROM (SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1) AS last_entry
    ) AS heads ORDER BY seq DESC, recorded DESC LIMIT 1";

/// The statement that reads the chain's head on `backend`.
pub(crate) fn head_sql(backend: DatabaseKind) -> &'static str {
    match backend {
        DatabaseKind::Sqlite => CHAIN_HEAD,
        DatabaseKind::Postgres => "SELECT seq, hash FROM audit_head WHERE id = 1",
    }
}

/// The length of an `audit_hours` bucket, in ms of `ts` (migration 0026).
pub(crate) const HOUR_MS: i64 = 3_600_000;

/// Records that entries from seq `$2` on are stamped in hour `$1`; a no-op
/// when the hour has a first seq already (a lower one: seqs only grow). Every
/// append runs it, so each hour's row holds the first seq stamped in it,
/// which is how the usage views find their window (`store::usage`).
pub(crate) const RECORD_HOUR: &str =
    "INSERT INTO audit_hours (hour, first_seq) VALUES ($1, $2) ON CONFLICT (hour) DO NOTHING";

/// [`RECORD_HOUR`] for every entry stored, in one statement (an import writes
/// rows without appending them). SQLite needs the `WHERE` to read the
/// `ON CONFLICT` as the insert's.
pub(crate) const RECORD_ALL_HOURS: &str = "INSERT INTO audit_hours (hour, first_seq)
    SELECT ts / 3600000, MIN(seq) FROM audit_log WHERE true GROUP BY ts / 3600000
    ON CONFLICT (hour) DO NOTHING";

/// Appends `entries` in order inside `tx` (from `Store::begin_write`, which
/// holds the head lock) and moves the head once; returns their seqs.
pub async fn append(tx: &mut Tx, entries: &[NewAuditRow], ts: i64) -> Result<Vec<i64>> {
    let head = head(tx).await?;
    append_after(tx, head, entries, ts, Some(ts.div_euclid(HOUR_MS))).await
}

/// [`append`] when the transaction already read the head (`seq`, `hash`),
/// recording `hour` when given ([`RECORD_HOUR`]).
async fn append_after(
    tx: &mut Tx,
    (mut seq, mut prev): (i64, String),
    entries: &[NewAuditRow],
    ts: i64,
    hour: Option<i64>,
) -> Result<Vec<i64>> {
    let mut rows = Vec::with_capacity(entries.len());
    for e in entries {
        seq += 1;
        let hash = entry_hash(seq, ts, &e.actor, &e.action, &e.subject, &e.detail, &prev);
        rows.push(AuditRow {
            seq,
            ts,
            actor: e.actor.clone(),
            action: e.action.clone(),
            subject: e.subject.clone(),
            detail: e.detail.clone(),
            prev_hash: std::mem::replace(&mut prev, hash.clone()),
            hash,
        });
    }
    // Multi-row inserts, 64 rows (512 parameters) at a time.
    for chunk in rows.chunks(64) {
        let values = (0..chunk.len())
            .map(|i| {
                let b = i * 8;
                format!(
                    "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6,
                    b + 7,
                    b + 8
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mut q = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash) VALUES {values}"
        )));
        for r in chunk {
            q = q
                .bind(r.seq)
                .bind(r.ts)
                .bind(r.actor.clone())
                .bind(r.action.clone())
                .bind(r.subject.clone())
                .bind(r.detail.clone())
                .bind(r.prev_hash.clone())
                .bind(r.hash.clone());
        }
        q.execute(&mut **tx)
            .await
            .map_err(|e| Error::storage("appending to the audit log", e))?;
    }
    if let (Some(hour), Some(first)) = (hour, rows.first()) {
        sqlx::query(RECORD_HOUR)
            .bind(hour)
            .bind(first.seq)
            .execute(&mut **tx)
            .await
            .map_err(|e| Error::storage("appending to the audit log", e))?;
    }
    if let Some(last) = rows.last() {
        sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
            .bind(last.seq)
            .bind(&last.hash)
            .execute(&mut **tx)
            .await
            .map_err(|e| Error::storage("moving the audit head", e))?;
    }
    Ok(rows.iter().map(|r| r.seq).collect())
}

/// Appends `entries` in a transaction of their own; returns their seqs once
/// it committed.
///
/// The hot path of every tool call: in place on a SQLite file (`direct`);
/// elsewhere the statement that takes the write lock also returns the head
/// on PostgreSQL, one round trip to the database fewer.
async fn commit(store: &Store, entries: &[NewAuditRow]) -> Result<Vec<i64>> {
    let seqs = commit_unrecorded(store, entries).await?;
    if let Some(last) = seqs.last() {
        store
            .committed
            .fetch_max(*last, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(seqs)
}

/// The hour of `ts` for [`RECORD_HOUR`], unless a group commit of this
/// store recorded it already.
fn hour_to_record(store: &Store, ts: i64) -> Option<i64> {
    let hour = ts.div_euclid(HOUR_MS);
    (store
        .recorded_hour
        .load(std::sync::atomic::Ordering::Relaxed)
        != hour)
        .then_some(hour)
}

/// Notes that a committed group commit recorded `hour` (see [`hour_to_record`]).
fn hour_recorded(store: &Store, hour: Option<i64>) {
    if let Some(hour) = hour {
        store
            .recorded_hour
            .store(hour, std::sync::atomic::Ordering::Relaxed);
    }
}

async fn commit_unrecorded(store: &Store, entries: &[NewAuditRow]) -> Result<Vec<i64>> {
    if let Some(direct) = &store.direct {
        // The process's write gate keeps its sqlx writes out of the way.
        let _gate = store.write_gate().await;
        let ts = crate::time::now_ms();
        let hour = hour_to_record(store, ts);
        if let Some(seqs) = direct.append(entries, ts, hour, false)? {
            hour_recorded(store, hour);
            direct.after_append();
            direct.after_commit();
            return Ok(seqs);
        }
        // Another process holds the write lock: wait for it off the runtime.
        direct
            .lock_waits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::debug!("the database is locked by another process; waiting for it");
        let (waiting, entries) = (direct.clone(), entries.to_vec());
        let ts = crate::time::now_ms();
        let hour = hour_to_record(store, ts);
        let waited = tokio::task::spawn_blocking(move || waiting.append(&entries, ts, hour, true))
            .await
            .map_err(|e| Error::storage("committing audit entries", e))??;
        hour_recorded(store, hour);
        direct.after_append();
        direct.after_commit();
        return Ok(waited.expect("a waiting append always writes"));
    }
    let (mut tx, head) = store.begin_write_returning_head().await?;
    let ts = crate::time::now_ms();
    let hour = hour_to_record(store, ts);
    let seqs = append_after(&mut tx, head, entries, ts, hour).await?;
    tx.commit()
        .await
        .map_err(|e| store.error("committing audit entries", e))?;
    hour_recorded(store, hour);
    Ok(seqs)
}

type Waiter = oneshot::Sender<Result<i64>>;

/// The most entries one group commit takes.
const MAX_GROUP: usize = 256;

/// One store's committer: its queue, started on first use.
#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: OnceLock<mpsc::UnboundedSender<(NewAuditRow, Waiter)>>,
}

/// Appends one entry, sharing the transaction with every entry recorded
/// meanwhile; returns its seq after that transaction committed.
pub async fn record(store: &Store, entry: NewAuditRow) -> Result<i64> {
    let queue = store.group.queue.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        // The task's copy of the store has a group of its own, so the queue's
        // sender lives only in the callers' stores and the task ends with them.
        let own = Store {
            group: Arc::default(),
            ..store.clone()
        };
        tokio::spawn(committer(own, rx));
        tx
    });
    let (done, answer) = oneshot::channel();
    match queue.send((entry, done)) {
        Ok(()) => answer.await.unwrap_or_else(|_| {
            Err(Error::storage(
                "committing an audit entry",
                "the audit committer stopped before answering",
            ))
        }),
        // The committer's runtime is gone: commit this entry alone.
        // Boxed, so the sqlx path's state is not part of every caller's future.
        Err(mpsc::error::SendError((entry, _))) => Ok(Box::pin(commit(store, &[entry])).await?[0]),
    }
}

async fn committer(store: Store, mut rx: mpsc::UnboundedReceiver<(NewAuditRow, Waiter)>) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, MAX_GROUP).await > 0 {
        let (entries, waiters): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
        match commit(&store, &entries).await {
            Ok(seqs) => {
                for (w, seq) in waiters.into_iter().zip(seqs) {
                    let _ = w.send(Ok(seq));
                }
            }
            Err(e) => {
                for w in waiters {
                    let _ = w.send(Err(e.clone()));
                }
            }
        }
    }
}

/// One stored audit entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct AuditRow {
    pub seq: i64,
    pub ts: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// Reads the chain head inside a write transaction (already locked by `begin_write`).
pub async fn head(tx: &mut Tx) -> Result<(i64, String)> {
    sqlx::query_as(head_sql(tx.backend))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading the audit head", e))
}

const COLUMNS: &str = "seq, ts, actor, action, subject, detail, prev_hash, hash";

/// Entries in chain order after `after_seq` and up to `upto`, at most `limit`.
pub async fn page(store: &Store, after_seq: i64, upto: i64, limit: i64) -> Result<Vec<AuditRow>> {
    let sql = &format!(
        "SELECT {COLUMNS} FROM audit_log WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3"
    );
    store
        .read("reading the audit log", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(after_seq)
                .bind(upto)
                .bind(limit)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// The newest `limit` entries, newest last.
pub async fn latest(store: &Store, limit: i64) -> Result<Vec<AuditRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT $1");
    let mut out: Vec<AuditRow> = store
        .read("reading the audit log", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(limit)
                .fetch_all(&pool)
                .await
        })
        .await?;
    out.reverse();
    Ok(out)
}

/// The recorded head (`audit_head`) and the lowest and highest seq stored,
/// read together (one statement, one snapshot): what the chain must reach,
/// and how far to read it while writers go on.
pub async fn chain_bounds(store: &Store) -> Result<(i64, String, Option<i64>, Option<i64>)> {
    let sql = "SELECT h.seq, h.hash, (SELECT MIN(seq) FROM audit_log), (SELECT MAX(seq) FROM audit_log) FROM audit_head h WHERE h.id = 1";
    store
        .read("reading the audit head", |pool| async move {
            sqlx::query_as(sql).fetch_one(&pool).await
        })
        .await
}

/// The chain's head as committed (outside any transaction): what a
/// checkpoint signs.
pub async fn committed_head(store: &Store) -> Result<(i64, String)> {
    if let Some(direct) = store.direct() {
        return direct.head(CHAIN_HEAD);
    }
    let sql = head_sql(store.backend());
    store
        .read("reading the audit head", |pool| async move {
            sqlx::query_as(sql).fetch_one(&pool).await
        })
        .await
}

/// Which entries a page of the log holds (see [`query`]). Prefixes match the
/// start of the field exactly (case-sensitive), so `key:` selects every key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub actor_prefix: Option<String>,
    pub action_prefix: Option<String>,
    /// Entries at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Entries before this time.
    pub until: Option<i64>,
    /// Entries older than this seq (the page cursor).
    pub before_seq: Option<i64>,
}

impl Query {
    /// The WHERE clause (`$1`… numbered from 1) and the values it binds.
    fn clause(&self, with_cursor: bool) -> (String, Vec<Bind>) {
        let mut parts = Vec::new();
        let mut binds = Vec::new();
        let mut param = |b: Bind| {
            binds.push(b);
            format!("${}", binds.len())
        };
        for (column, prefix) in [
            ("actor", &self.actor_prefix),
            ("action", &self.action_prefix),
        ] {
            if let Some(p) = prefix {
                // substr counts characters on both backends; PostgreSQL's
                // takes an INTEGER, hence the cast of the bound BIGINT.
                let len = param(Bind::Int(p.chars().count() as i64));
                let text = param(Bind::Text(p.clone()));
                parts.push(format!(
                    "substr({column}, 1, CAST({len} AS INTEGER)) = {text}"
                ));
            }
        }
        if let Some(t) = self.since {
            parts.push(format!("ts >= {}", param(Bind::Int(t))));
        }
        if let Some(t) = self.until {
            parts.push(format!("ts < {}", param(Bind::Int(t))));
        }
        if with_cursor && let Some(seq) = self.before_seq {
            parts.push(format!("seq < {}", param(Bind::Int(seq))));
        }
        if parts.is_empty() {
            (String::new(), binds)
        } else {
            (format!(" WHERE {}", parts.join(" AND ")), binds)
        }
    }
}

#[derive(Debug, Clone)]
enum Bind {
    Text(String),
    Int(i64),
}

/// Binds `binds` in order to the query `q` (a macro: the query types differ).
macro_rules! bind_all {
    ($q:expr, $binds:expr) => {{
        let mut q = $q;
        for b in $binds.iter() {
            q = match b {
                Bind::Text(s) => q.bind(s.clone()),
                Bind::Int(i) => q.bind(*i),
            };
        }
        q
    }};
}

/// Up to `limit` entries matching `q`, newest first.
pub async fn query(store: &Store, q: &Query, limit: i64) -> Result<Vec<AuditRow>> {
    let (clause, binds) = q.clause(true);
    let sql = &format!(
        "SELECT {COLUMNS} FROM audit_log{clause} ORDER BY seq DESC LIMIT ${}",
        binds.len() + 1
    );
    let binds = &binds;
    store
        .read("reading the audit log", |pool| async move {
            bind_all!(sqlx::query_as(AssertSqlSafe(sql.as_str())), binds)
                .bind(limit)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// How many entries match `q`, ignoring its cursor.
pub async fn count(store: &Store, q: &Query) -> Result<i64> {
    let (clause, binds) = q.clause(false);
    let sql = &format!("SELECT COUNT(*) FROM audit_log{clause}");
    let binds = &binds;
    let (n,): (i64,) = store
        .read("counting audit entries", |pool| async move {
            bind_all!(sqlx::query_as(AssertSqlSafe(sql.as_str())), binds)
                .fetch_one(&pool)
                .await
        })
        .await?;
    Ok(n)
}

/// For every actor starting with `prefix`: how many entries it has and the
/// time of its newest one.
pub async fn activity(store: &Store, prefix: &str) -> Result<Vec<(String, i64, i64)>> {
    let q = Query {
        actor_prefix: Some(prefix.to_string()),
        ..Query::default()
    };
    let (clause, binds) = q.clause(false);
    let sql = &format!("SELECT actor, COUNT(*), MAX(ts) FROM audit_log{clause} GROUP BY actor");
    let binds = &binds;
    store
        .read("counting uses in the audit log", |pool| async move {
            bind_all!(sqlx::query_as(AssertSqlSafe(sql.as_str())), binds)
                .fetch_all(&pool)
                .await
        })
        .await
}
