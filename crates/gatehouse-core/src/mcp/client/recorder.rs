//! [`StoreRecorder`]: call and connection records in the site's database.

use super::lifecycle::{CallRecord, CallRecorder, ConnectionRun, RecordFuture};
use crate::store::{self, Store};

/// Persists records through the store (all SQL stays in `store`).
#[derive(Debug, Clone)]
pub struct StoreRecorder {
    store: Store,
}

impl StoreRecorder {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

impl CallRecorder for StoreRecorder {
    fn record_call<'a>(&'a self, record: &'a CallRecord) -> RecordFuture<'a> {
        Box::pin(store::calls::upsert(&self.store, record))
    }

    fn record_connection<'a>(&'a self, record: &'a ConnectionRun) -> RecordFuture<'a> {
        Box::pin(store::connections::upsert_run(&self.store, record))
    }
}
