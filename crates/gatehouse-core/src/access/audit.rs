//! The append-only, hash-chained audit log.
//!
//! Each entry's hash covers its own fields and the previous entry's hash, and the
//! `audit_head` row holds the last seq and hash, so [`verify`] can tell an edited
//! entry (its hash no longer matches), a removed or reordered one (seq gap or a
//! broken `prev_hash` link) and a truncated tail (the head points past the end).
//! Appends happen inside the caller's write transaction, so an action and its
//! audit entry commit together or not at all.

use serde::Serialize;

use crate::error::{Error, Result, codes};
use crate::store::audit::{self as sql, AuditRow};
use crate::store::{Store, Tx};
use crate::time::now_ms;

pub use crate::store::audit::{GENESIS, entry_hash};

/// What is being recorded. `detail` is JSON and must never hold a secret.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub subject: &'a str,
    pub detail: serde_json::Value,
}

impl AuditEntry<'_> {
    fn to_new(&self) -> sql::NewAuditRow {
        sql::NewAuditRow {
            actor: self.actor.to_string(),
            action: self.action.to_string(),
            subject: self.subject.to_string(),
            detail: self.detail.to_string(),
        }
    }
}

/// Appends `entry` inside `tx` (which must come from `Store::begin_write`).
pub async fn append(tx: &mut Tx, entry: AuditEntry<'_>) -> Result<i64> {
    Ok(sql::append(tx, &[entry.to_new()], now_ms()).await?[0])
}

/// Appends one entry in a transaction of its own, shared with the entries
/// other tasks record at the same time (group commit, see `store::audit`).
/// Returns once the transaction holding it committed.
pub async fn record(store: &Store, entry: AuditEntry<'_>) -> Result<i64> {
    sql::record(store, entry.to_new()).await
}

/// The result of checking the whole chain.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "AuditReport")]
pub struct Report {
    pub entries: i64,
    pub ok: bool,
    /// The first entry found altered, removed or out of order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub first_bad_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub problem: Option<String>,
    /// The newest entry a trusted signed checkpoint vouches for (see
    /// [`crate::site::checkpoint::verify`]); `None` from the bare chain check.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub anchored_at: Option<i64>,
    /// Validly signed checkpoints from keys this machine does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub unverified_checkpoints: Option<usize>,
}

/// Checks the whole chain, offline, in pages (the log can be long).
pub async fn verify(store: &Store) -> Result<Report> {
    let (head_seq, head_hash) = sql::committed_head(store).await?;
    let mut expected_seq = 1;
    let mut prev = GENESIS.to_string();
    let mut entries = 0;
    let bad = |seq: i64, problem: String, entries: i64| Report {
        entries,
        ok: false,
        first_bad_seq: Some(seq),
        problem: Some(problem),
        anchored_at: None,
        unverified_checkpoints: None,
    };
    loop {
        let page = sql::page(store, expected_seq - 1, 1000).await?;
        if page.is_empty() {
            break;
        }
        for row in page {
            entries += 1;
            if row.seq != expected_seq {
                return Ok(bad(
                    expected_seq,
                    format!(
                        "entry {expected_seq} is missing (next stored entry is {})",
                        row.seq
                    ),
                    entries,
                ));
            }
            if row.prev_hash != prev {
                return Ok(bad(
                    row.seq,
                    format!(
                        "entry {} does not follow entry {} (removed, inserted or reordered)",
                        row.seq,
                        row.seq - 1
                    ),
                    entries,
                ));
            }
            let hash = entry_hash(
                row.seq,
                row.ts,
                &row.actor,
                &row.action,
                &row.subject,
                &row.detail,
                &row.prev_hash,
            );
            if hash != row.hash {
                return Ok(bad(
                    row.seq,
                    format!(
                        "entry {} was altered (its hash does not match its contents)",
                        row.seq
                    ),
                    entries,
                ));
            }
            prev = row.hash;
            expected_seq += 1;
        }
    }
    let last = expected_seq - 1;
    if head_seq != last || (last > 0 && head_hash != prev) {
        let first_missing = last + 1;
        return Ok(bad(
            first_missing,
            format!(
                "the chain ends at entry {last} but its head records entry {head_seq}: entries from {first_missing} were removed"
            ),
            entries,
        ));
    }
    Ok(Report {
        entries,
        ok: true,
        first_bad_seq: None,
        problem: None,
        anchored_at: None,
        unverified_checkpoints: None,
    })
}

/// [`verify`] as an error when the chain is broken.
pub fn require_ok(report: &Report) -> Result<()> {
    if report.ok {
        return Ok(());
    }
    Err(Error::new(
        codes::AUDIT_CHAIN_BROKEN,
        report.problem.clone().unwrap_or_default(),
    )
    .hint("restore the database from a backup; the entries before the reported one are intact")
    .detail(serde_json::json!({"first_bad_seq": report.first_bad_seq})))
}

/// The newest `limit` entries.
pub async fn list(store: &Store, limit: i64) -> Result<Vec<AuditRow>> {
    sql::latest(store, limit).await
}
