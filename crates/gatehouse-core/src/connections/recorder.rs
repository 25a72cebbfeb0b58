//! [`StoreRecorder`]: call and connection records in the site's database.
//!
//! The store keeps plain columns ([`CallRow`], [`RunRow`]); this file maps the
//! client's records to them and back, so `store` knows no client type.
//!
//! An outbound call is also audited (`mcp.client_call`) when it is dispatched
//! and when it ends, in the same transaction as its record: the dispatch
//! record is written before the request is sent, so a call whose entry cannot
//! be committed is never sent. Entries hold the tool, ids and the state, never
//! the arguments or the result.

use serde_json::json;

use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::error::{Error, Result, codes};
use crate::mcp::client::lifecycle::{
    CallRecord, CallRecorder, CallState, ConnectionRun, EffectClass, RecordFuture, StderrCounters,
    StreamEnd,
};
use crate::sandbox::ExitInfo;
use crate::store::calls::CallRow;
use crate::store::connections::RunRow;
use crate::store::{self, Store};

/// Who outbound calls are attributed to when the caller names no one.
pub const LOCAL_ADMIN: &str = crate::access::audit::AuditActor::LOCAL_ADMIN;

/// Persists records through the store (all SQL stays in `store`).
#[derive(Debug, Clone)]
pub struct StoreRecorder {
    store: Store,
    actor: String,
}

impl StoreRecorder {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            actor: LOCAL_ADMIN.to_string(),
        }
    }

    /// The actor outbound calls are audited under.
    pub fn with_actor(mut self, actor: &str) -> Self {
        self.actor = actor.to_string();
        self
    }
}

/// Whether a transition is one the audit log records.
fn audited(state: CallState) -> bool {
    !matches!(state, CallState::Received | CallState::Validated)
}

impl CallRecorder for StoreRecorder {
    fn record_call<'a>(&'a self, record: &'a CallRecord) -> RecordFuture<'a> {
        let row = call_row(record);
        if !audited(record.state) {
            return Box::pin(async move { store::calls::upsert(&self.store, &row).await });
        }
        Box::pin(async move {
            let mut tx = self.store.begin_write().await?;
            store::calls::upsert_in(&mut tx, &row).await?;
            audit::append(
                &mut tx,
                audit::AuditEntry {
                    actor: &self.actor,
                    action: AuditAction::McpClientCall,
                    subject: &record.tool,
                    detail: json!({
                        "connection_id": record.connection_id,
                        "call_id": record.call_id,
                        "state": record.state.as_str(),
                        "code": record.error.as_ref().map(|e| e.code),
                        "args_bytes": record.args_bytes,
                    }),
                },
            )
            .await?;
            tx.commit()
                .await
                .map_err(|e| Error::storage("recording a call", e))
        })
    }

    fn record_connection<'a>(&'a self, record: &'a ConnectionRun) -> RecordFuture<'a> {
        let row = run_row(record);
        Box::pin(async move { store::connections::upsert_run(&self.store, &row).await })
    }
}

/// The stored record of one call, if any.
pub async fn load_call(store: &Store, call_id: &str) -> Result<Option<CallRecord>> {
    store::calls::get(store, call_id)
        .await?
        .map(call_record)
        .transpose()
}

/// The stored calls of one connection run, oldest first.
pub async fn load_calls(store: &Store, connection_id: &str) -> Result<Vec<CallRecord>> {
    store::calls::list_for_connection(store, connection_id)
        .await?
        .into_iter()
        .map(call_record)
        .collect()
}

/// `limit` calls of every run of stored connection `name`, newest first,
/// after the newest `offset`.
pub async fn load_calls_of(
    store: &Store,
    name: &str,
    offset: i64,
    limit: i64,
) -> Result<Vec<CallRecord>> {
    store::calls::list_for_name(store, name, offset, limit)
        .await?
        .into_iter()
        .map(call_record)
        .collect()
}

/// The stored record of one connection run, if any.
pub async fn load_run(store: &Store, connection_id: &str) -> Result<Option<ConnectionRun>> {
    store::connections::get_run(store, connection_id)
        .await?
        .map(run_record)
        .transpose()
}

fn stream_end_str(end: StreamEnd) -> &'static str {
    match end {
        StreamEnd::Open => "open",
        StreamEnd::Eof => "eof",
        StreamEnd::FrameTooLarge => "frame_too_large",
        StreamEnd::ReadError => "read_error",
    }
}

fn parse_stream_end(s: &str) -> StreamEnd {
    match s {
        "eof" => StreamEnd::Eof,
        "frame_too_large" => StreamEnd::FrameTooLarge,
        "read_error" => StreamEnd::ReadError,
        _ => StreamEnd::Open,
    }
}

fn exit_of(code: Option<i64>, signal: Option<i64>) -> Option<ExitInfo> {
    (code.is_some() || signal.is_some()).then(|| ExitInfo {
        code: code.map(|c| c as i32),
        signal: signal.map(|s| s as i32),
    })
}

fn call_row(r: &CallRecord) -> CallRow {
    CallRow {
        call_id: r.call_id.clone(),
        connection_id: r.connection_id.clone(),
        tool: r.tool.clone(),
        state: r.state.as_str().to_string(),
        effect: r.effect.map(|e| e.as_str().to_string()),
        request_id: r.request_id.map(|i| i as i64),
        args_bytes: r.args_bytes as i64,
        error: r
            .error
            .as_ref()
            .map(|e| serde_json::to_string(e).unwrap_or_default()),
        exit_code: r.exit.and_then(|e| e.code).map(i64::from),
        exit_signal: r.exit.and_then(|e| e.signal).map(i64::from),
        stderr_bytes_seen: r.stderr.bytes_seen as i64,
        stderr_bytes_retained: r.stderr.bytes_retained as i64,
        stderr_truncated: i64::from(r.stderr.truncated),
        stdout_end: stream_end_str(r.stdout_end).to_string(),
        stderr_end: stream_end_str(r.stderr_end).to_string(),
        received_at: r.received_at_ms,
        dispatched_at: r.dispatched_at_ms,
        finished_at: r.finished_at_ms,
    }
}

fn call_record(row: CallRow) -> Result<CallRecord> {
    Ok(CallRecord {
        state: CallState::parse(&row.state)
            .ok_or_else(|| Error::storage("reading a call", format!("bad state {}", row.state)))?,
        effect: row.effect.map(|e| {
            if e == "read_only" {
                EffectClass::ReadOnly
            } else {
                EffectClass::MayWrite
            }
        }),
        request_id: row.request_id.map(|i| i as u64),
        args_bytes: row.args_bytes as u64,
        error: row.error.and_then(|e| serde_json::from_str(&e).ok()),
        exit: exit_of(row.exit_code, row.exit_signal),
        stderr: StderrCounters {
            bytes_seen: row.stderr_bytes_seen as u64,
            bytes_retained: row.stderr_bytes_retained as u64,
            truncated: row.stderr_truncated != 0,
        },
        stdout_end: parse_stream_end(&row.stdout_end),
        stderr_end: parse_stream_end(&row.stderr_end),
        received_at_ms: row.received_at,
        dispatched_at_ms: row.dispatched_at,
        finished_at_ms: row.finished_at,
        call_id: row.call_id,
        connection_id: row.connection_id,
        tool: row.tool,
    })
}

fn run_row(r: &ConnectionRun) -> RunRow {
    RunRow {
        connection_id: r.connection_id.clone(),
        name: r.name.clone(),
        program: r.program.clone(),
        pid: r.pid.map(i64::from),
        era: r.era.map(|e| e.as_str().to_string()),
        protocol_version: r.protocol_version.clone(),
        server_name: r.server_name.clone(),
        server_version: r.server_version.clone(),
        end_reason: r.end_reason.map(|e| e.as_str().to_string()),
        exit_code: r.exit.and_then(|e| e.code).map(i64::from),
        exit_signal: r.exit.and_then(|e| e.signal).map(i64::from),
        stderr_bytes_seen: r.stderr.bytes_seen as i64,
        stderr_bytes_retained: r.stderr.bytes_retained as i64,
        stderr_truncated: i64::from(r.stderr.truncated),
        stderr_excerpt: r.stderr_excerpt.clone(),
        stdout_end: stream_end_str(r.stdout_end).to_string(),
        stderr_end: stream_end_str(r.stderr_end).to_string(),
        protocol_violations: r.protocol_violations as i64,
        started_at: r.started_at_ms,
        ended_at: r.ended_at_ms,
    }
}

/// A stored word read back as its enum. A word this build does not know (a
/// newer build wrote it, or it was edited in) is an error naming the column
/// and the word, never a panic and never silently dropped.
fn stored<T: std::str::FromStr>(word: Option<String>, column: &str, id: &str) -> Result<Option<T>> {
    let Some(word) = word else { return Ok(None) };
    word.parse().map(Some).map_err(|_| {
        Error::new(
            codes::STORED_VALUE_UNKNOWN,
            format!("connection run {id} stores {column} {word:?}, which this build does not know"),
        )
        .hint("the record was written by a newer Gatehouse, or edited; open the site with a build at least as new")
    })
}

fn run_record(row: RunRow) -> Result<ConnectionRun> {
    let era = stored(row.era, "era", &row.connection_id)?;
    let end_reason = stored(row.end_reason, "end_reason", &row.connection_id)?;
    Ok(ConnectionRun {
        pid: row.pid.map(|p| p as i32),
        exit: exit_of(row.exit_code, row.exit_signal),
        stderr: StderrCounters {
            bytes_seen: row.stderr_bytes_seen as u64,
            bytes_retained: row.stderr_bytes_retained as u64,
            truncated: row.stderr_truncated != 0,
        },
        stdout_end: parse_stream_end(&row.stdout_end),
        stderr_end: parse_stream_end(&row.stderr_end),
        protocol_violations: row.protocol_violations as u64,
        started_at_ms: row.started_at,
        ended_at_ms: row.ended_at,
        connection_id: row.connection_id,
        name: row.name,
        program: row.program,
        era,
        protocol_version: row.protocol_version,
        server_name: row.server_name,
        server_version: row.server_version,
        end_reason,
        stderr_excerpt: row.stderr_excerpt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words stored by earlier builds read back as the same enums; a word no
    /// build of this one wrote is a coded error, not a panic or a silent gap.
    #[tokio::test]
    async fn stored_end_reasons_and_eras_read_back_and_unknown_ones_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&store::sqlite_url(&tmp.path().join("site.db")))
            .await
            .unwrap();
        let row = |id: &str, era: &str, reason: &str| RunRow {
            connection_id: id.into(),
            name: None,
            program: "srv".into(),
            pid: None,
            era: Some(era.into()),
            protocol_version: None,
            server_name: None,
            server_version: None,
            end_reason: Some(reason.into()),
            exit_code: None,
            exit_signal: None,
            stderr_bytes_seen: 0,
            stderr_bytes_retained: 0,
            stderr_truncated: 0,
            stderr_excerpt: None,
            stdout_end: "eof".into(),
            stderr_end: "eof".into(),
            protocol_violations: 0,
            started_at: 1,
            ended_at: Some(2),
        };
        // The exact strings earlier builds wrote.
        store::connections::upsert_run(&store, &row("c1", "legacy", "scratch_quota"))
            .await
            .unwrap();
        store::connections::upsert_run(&store, &row("c2", "modern", "host_killed"))
            .await
            .unwrap();
        let r = load_run(&store, "c1").await.unwrap().unwrap();
        assert_eq!(r.era, Some(crate::mcp::wire::revisions::Era::Legacy));
        assert_eq!(
            r.end_reason,
            Some(crate::mcp::client::EndReason::ScratchQuota)
        );
        let r = load_run(&store, "c2").await.unwrap().unwrap();
        assert_eq!(
            r.end_reason,
            Some(crate::mcp::client::EndReason::HostKilled)
        );

        store::connections::upsert_run(&store, &row("c3", "modern", "teleported"))
            .await
            .unwrap();
        let e = load_run(&store, "c3").await.unwrap_err();
        assert_eq!(e.code, codes::STORED_VALUE_UNKNOWN);
        assert!(
            e.message.contains("teleported") && e.message.contains("end_reason"),
            "{}",
            e.message
        );
    }
}
