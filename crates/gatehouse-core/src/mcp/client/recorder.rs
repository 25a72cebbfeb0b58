//! [`StoreRecorder`]: call and connection records in the site's database.
//!
//! An outbound call is also audited (`mcp.client_call`) when it is dispatched
//! and when it ends, in the same transaction as its record: the dispatch
//! record is written before the request is sent, so a call whose entry cannot
//! be committed is never sent. Entries hold the tool, ids and the state, never
//! the arguments or the result.

use serde_json::json;

use super::lifecycle::{CallRecord, CallRecorder, CallState, ConnectionRecord, RecordFuture};
use crate::access::audit;
use crate::error::Error;
use crate::store::{self, Store};

/// Who outbound calls are attributed to when the caller names no one.
pub const LOCAL_ADMIN: &str = "local-admin";

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
        if !audited(record.state) {
            return Box::pin(store::calls::upsert(&self.store, record));
        }
        Box::pin(async move {
            let mut tx = self.store.begin_write().await?;
            store::calls::upsert_in(&mut tx, record).await?;
            audit::append(
                &mut tx,
                audit::Entry {
                    actor: &self.actor,
                    action: "mcp.client_call",
                    subject: &record.tool,
                    detail: json!({
                        "connection_id": record.connection_id,
                        "call_id": record.call_id,
                        "state": record.state.as_str(),
                        "code": record.error.as_ref().map(|e| e.code.clone()),
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

    fn record_connection<'a>(&'a self, record: &'a ConnectionRecord) -> RecordFuture<'a> {
        Box::pin(store::connections::upsert_run(&self.store, record))
    }
}
