//! The audit log as a person reads it: filtered pages, newest first, and a
//! JSON export that keeps every field the chain hashes (so the file can be
//! checked again elsewhere).
//!
//! Filters arrive as text from the desktop app; they are checked here, so
//! every caller refuses the same bad input the same way.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::audit::{self as sql, AuditRow, Query};

/// The most entries one page holds.
pub const MAX_PAGE: i64 = 200;
/// The longest actor or action prefix accepted.
const MAX_PREFIX: usize = 200;
/// Entries read per query while exporting.
const EXPORT_BATCH: i64 = 1000;

/// What the Audit screen filters by. Empty text means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AuditFilter {
    /// The start of the actor (`key:` for every key, `user:a@b.c` for one user).
    #[serde(default)]
    pub actor: String,
    /// The start of the action (`key.` for every key action).
    #[serde(default)]
    pub action: String,
    /// Entries at or after this RFC 3339 time.
    #[serde(default)]
    pub since: String,
    /// Entries before this RFC 3339 time.
    #[serde(default)]
    pub until: String,
}

fn prefix(what: &str, text: &str) -> Result<Option<String>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if text.chars().count() > MAX_PREFIX || text.chars().any(char::is_control) {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("the {what} filter must be at most {MAX_PREFIX} printable characters"),
            format!("type the start of the {what}, e.g. key: or user:"),
        ));
    }
    Ok(Some(text.to_string()))
}

fn instant(what: &str, text: &str) -> Result<Option<i64>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|_| {
            Error::invalid(
                codes::INPUT_INVALID,
                format!("cannot read the {what} time {text:?}"),
                "give an RFC 3339 time such as 2026-12-01T09:00:00Z",
            )
        })?;
    Ok(Some((at.unix_timestamp_nanos() / 1_000_000) as i64))
}

impl AuditFilter {
    /// The store query this filter asks for, or why it cannot be run.
    pub fn to_query(&self) -> Result<Query> {
        let since = instant("from", &self.since)?;
        let until = instant("to", &self.until)?;
        if let (Some(s), Some(u)) = (since, until)
            && s >= u
        {
            return Err(Error::invalid(
                codes::INPUT_INVALID,
                "the “from” time is not before the “to” time",
                "swap the two times, or clear one of them",
            ));
        }
        Ok(Query {
            actor_prefix: prefix("actor", &self.actor)?,
            action_prefix: prefix("action", &self.action)?,
            since,
            until,
            before_seq: None,
        })
    }
}

/// One entry as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct AuditEntry {
    pub seq: i64,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub ts: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    /// The recorded detail, parsed (it is JSON text in the store).
    #[ts(type = "unknown")]
    pub detail: serde_json::Value,
    pub hash: String,
}

impl From<AuditRow> for AuditEntry {
    fn from(row: AuditRow) -> Self {
        let detail =
            serde_json::from_str(&row.detail).unwrap_or(serde_json::Value::String(row.detail));
        Self {
            seq: row.seq,
            ts: row.ts,
            actor: row.actor,
            action: row.action,
            subject: row.subject,
            detail,
            hash: row.hash,
        }
    }
}

/// One page of the log, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// How many entries match the filter, on every page.
    pub total: i64,
    /// The cursor of the next (older) page; `null` on the last page.
    pub next_before: Option<i64>,
}

/// The page of entries matching `filter` that are older than `before_seq`
/// (the newest when `None`), at most `limit` (1 to [`MAX_PAGE`]).
pub async fn page(
    store: &Store,
    filter: &AuditFilter,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<AuditPage> {
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("a page holds 1 to {MAX_PAGE} entries, not {limit}"),
            "ask for a smaller page",
        ));
    }
    if before_seq.is_some_and(|s| s < 1) {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "the page cursor is not an entry number",
            "start again from the newest page",
        ));
    }
    let mut query = filter.to_query()?;
    let total = sql::count(store, &query).await?;
    query.before_seq = before_seq;
    let mut rows = sql::query(store, &query, limit + 1).await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_before = if more {
        rows.last().map(|r| r.seq)
    } else {
        None
    };
    Ok(AuditPage {
        entries: rows.into_iter().map(AuditEntry::from).collect(),
        total,
        next_before,
    })
}

/// Every entry matching `filter`, oldest first, exactly as stored.
pub async fn matching(store: &Store, filter: &AuditFilter) -> Result<Vec<AuditRow>> {
    let mut query = filter.to_query()?;
    let mut out = Vec::new();
    loop {
        let batch = sql::query(store, &query, EXPORT_BATCH).await?;
        let Some(last) = batch.last() else { break };
        query.before_seq = Some(last.seq);
        let done = (batch.len() as i64) < EXPORT_BATCH;
        out.extend(batch);
        if done {
            break;
        }
    }
    out.reverse();
    Ok(out)
}

/// The export file's contents. `detail` stays the stored text and
/// `prev_hash`/`hash` are kept, so the chain can be recomputed from it.
#[derive(Debug, Serialize)]
struct ExportFile<'a> {
    format: &'static str,
    version: u32,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    exported_at: i64,
    filter: &'a AuditFilter,
    entries: Vec<ExportEntry>,
}

#[derive(Debug, Serialize)]
struct ExportEntry {
    seq: i64,
    ts: i64,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    time: i64,
    actor: String,
    action: String,
    subject: String,
    detail: String,
    prev_hash: String,
    hash: String,
}

/// Where an export went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct AuditExport {
    pub path: String,
    pub entries: usize,
}

/// The export of `rows` as JSON text.
pub fn export_json(filter: &AuditFilter, rows: Vec<AuditRow>, now: i64) -> String {
    let file = ExportFile {
        format: "gatehouse-audit-export",
        version: 1,
        exported_at: now,
        filter,
        entries: rows
            .into_iter()
            .map(|r| ExportEntry {
                seq: r.seq,
                ts: r.ts,
                time: r.ts,
                actor: r.actor,
                action: r.action,
                subject: r.subject,
                detail: r.detail,
                prev_hash: r.prev_hash,
                hash: r.hash,
            })
            .collect(),
    };
    serde_json::to_string_pretty(&file).expect("export serialises")
}

/// Checks that `dir` is an existing, absolute folder to export into.
pub fn check_export_dir(dir: &str) -> Result<PathBuf> {
    let path = PathBuf::from(dir.trim());
    let bad = |why: &str| {
        Error::invalid(
            codes::INPUT_INVALID,
            format!("cannot export into {:?}: {why}", dir.trim()),
            "choose an existing folder (its full path)",
        )
    };
    if dir.trim().is_empty() {
        return Err(bad("no folder given"));
    }
    if !path.is_absolute() {
        return Err(bad("the path is not absolute"));
    }
    if !path.is_dir() {
        return Err(bad("it is not an existing folder"));
    }
    Ok(path)
}

/// Writes the entries matching `filter` to a new file in `dir`
/// (`gatehouse-audit-<time>.json`); never overwrites a file.
pub async fn export_to(store: &Store, filter: &AuditFilter, dir: &Path) -> Result<AuditExport> {
    let rows = matching(store, filter).await?;
    let entries = rows.len();
    let now = crate::time::now_ms();
    let text = export_json(filter, rows, now);
    let stamp = crate::time::rfc3339(now)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(15)
        .collect::<String>();
    let path = write_new(dir, &format!("gatehouse-audit-{stamp}"), text.as_bytes())?;
    Ok(AuditExport {
        path: path.display().to_string(),
        entries,
    })
}

/// Writes `bytes` to `<stem>.json` in `dir`, or `<stem>-2.json`… if taken.
fn write_new(dir: &Path, stem: &str, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write as _;
    for n in 1..100 {
        let name = if n == 1 {
            format!("{stem}.json")
        } else {
            format!("{stem}-{n}.json")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                return match f.write_all(bytes).and_then(|()| f.sync_all()) {
                    Ok(()) => Ok(path),
                    Err(e) => Err(Error::new(
                        codes::IO_ERROR,
                        format!("cannot write {}: {e}", path.display()),
                    )),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::new(
                    codes::IO_ERROR,
                    format!("cannot create {}: {e}", path.display()),
                )
                .hint("choose a folder you can write to"));
            }
        }
    }
    Err(Error::new(
        codes::IO_ERROR,
        format!("too many exports named {stem} in {}", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_filter_is_no_condition() {
        assert_eq!(AuditFilter::default().to_query().unwrap(), Query::default());
    }

    #[test]
    fn filters_are_trimmed_and_times_parsed() {
        let f = AuditFilter {
            actor: " key: ".into(),
            action: "user.".into(),
            since: "2026-01-01T00:00:00Z".into(),
            until: "2026-01-02T00:00:00+00:00".into(),
        };
        let q = f.to_query().unwrap();
        assert_eq!(q.actor_prefix.as_deref(), Some("key:"));
        assert_eq!(q.action_prefix.as_deref(), Some("user."));
        assert_eq!(q.since, Some(1_767_225_600_000));
        assert_eq!(q.until, Some(1_767_225_600_000 + 86_400_000));
    }

    #[test]
    fn bad_filters_are_refused_with_a_hint() {
        let bad_time = AuditFilter {
            since: "yesterday".into(),
            ..Default::default()
        };
        let e = bad_time.to_query().unwrap_err();
        assert_eq!(e.code, codes::INPUT_INVALID);
        assert!(e.hint.unwrap().contains("RFC 3339"));
        let reversed = AuditFilter {
            since: "2026-01-02T00:00:00Z".into(),
            until: "2026-01-01T00:00:00Z".into(),
            ..Default::default()
        };
        assert!(
            reversed
                .to_query()
                .unwrap_err()
                .message
                .contains("not before")
        );
        let control = AuditFilter {
            actor: "key:\u{7}".into(),
            ..Default::default()
        };
        assert_eq!(control.to_query().unwrap_err().code, codes::INPUT_INVALID);
    }

    #[test]
    fn export_keeps_what_the_chain_hashes() {
        let row = AuditRow {
            seq: 1,
            ts: 5,
            actor: "cli".into(),
            action: "key.mint".into(),
            subject: "abc".into(),
            detail: "{\"label\":\"x\"}".into(),
            prev_hash: crate::store::audit::GENESIS.into(),
            hash: "h".into(),
        };
        let text = export_json(&AuditFilter::default(), vec![row], 0);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format"], "gatehouse-audit-export");
        assert_eq!(v["entries"][0]["detail"], "{\"label\":\"x\"}");
        assert_eq!(v["entries"][0]["prev_hash"], crate::store::audit::GENESIS);
        assert_eq!(v["entries"][0]["ts"], 5);
    }

    #[test]
    fn export_dir_must_be_an_absolute_existing_folder() {
        assert!(check_export_dir("").is_err());
        assert!(check_export_dir("relative/dir").is_err());
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_export_dir(file.to_str().unwrap()).is_err());
        assert_eq!(
            check_export_dir(tmp.path().to_str().unwrap()).unwrap(),
            tmp.path()
        );
    }

    #[test]
    fn exports_never_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        let a = write_new(tmp.path(), "x", b"1").unwrap();
        let b = write_new(tmp.path(), "x", b"2").unwrap();
        assert_ne!(a, b);
        assert_eq!(std::fs::read(&a).unwrap(), b"1");
        assert!(b.ends_with("x-2.json"));
    }
}
