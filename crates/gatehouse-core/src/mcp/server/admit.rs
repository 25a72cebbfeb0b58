//! Admission: what every transport does with one message before it is served.
//!
//! [`Admission::admit`] weighs a message's text against the memory budget
//! ([`super::budget`]), parses it and classifies it, and either admits it
//! (holding its share of the budget until the admitted message is dropped) or
//! returns the JSON-RPC refusal to send instead. [`super::dispatch`] then
//! serves what was admitted. stdio admits each line; HTTP admits each body.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Limits, budget};
use crate::mcp::wire::jsonrpc::{self, Message, Rejection};

/// The budget every admitted message holds its cost against.
#[derive(Clone)]
pub struct Admission {
    max_request_cost: usize,
    /// The memory budget, in KiB so that any total fits a semaphore.
    budget: Arc<Semaphore>,
}

/// A message that may be served, with its share of the memory budget.
pub struct Admitted {
    pub message: Incoming,
    /// Released when the admitted message (and whatever serves it) is dropped.
    pub held: OwnedSemaphorePermit,
}

/// What an admitted message is.
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Option<Map<String, Value>>,
    },
    Notification {
        method: String,
        params: Option<Map<String, Value>>,
    },
    /// A response to a request the server sent (e.g. `elicitation/create`).
    Response {
        id: Value,
        outcome: Result<Value, jsonrpc::ErrorData>,
    },
    /// A non-empty JSON-RPC batch (allowed only where the revision has them).
    Batch(Vec<Value>),
}

impl Admission {
    pub fn new(limits: &Limits) -> Admission {
        Admission {
            max_request_cost: limits.max_request_cost,
            budget: Arc::new(Semaphore::new(limits.max_total_cost >> 10)),
        }
    }

    /// Admits one message, or returns the reply that refuses it. `Ok(None)`:
    /// the text is blank and gets no reply at all. Never waits: a full budget
    /// is answered "busy" at once.
    pub fn admit(&self, text: &[u8], batches_allowed: bool) -> Result<Option<Admitted>, Value> {
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        // Weigh the text before building it.
        let cost = budget::estimate(text);
        if cost > self.max_request_cost {
            tracing::debug!(cost, "refusing a message that would cost too much to parse");
            return Err(jsonrpc::error_response(
                &budget::id_of(text),
                &budget::too_costly(cost, self.max_request_cost),
            ));
        }
        let cost_kib = u32::try_from(cost.div_ceil(1024)).unwrap_or(u32::MAX);
        let Ok(held) = self.budget.clone().try_acquire_many_owned(cost_kib) else {
            return Err(jsonrpc::error_response(
                &budget::id_of(text),
                &budget::busy("the messages being served already use the memory budget"),
            ));
        };
        if let Some(Message::Request { id, method, params }) = jsonrpc::usual_request(text) {
            let message = Incoming::Request { id, method, params };
            return Ok(Some(Admitted { message, held }));
        }
        let value: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(error = %e, "unparsable message");
                return Err(refusal(&jsonrpc::parse_error(&e.to_string())));
            }
        };
        let message = match value {
            Value::Array(items) if items.is_empty() => {
                return Err(refusal(&jsonrpc::invalid_request(
                    Value::Null,
                    "Invalid Request: an empty batch",
                )));
            }
            Value::Array(_) if !batches_allowed => {
                return Err(refusal(&jsonrpc::invalid_request(
                    Value::Null,
                    "Invalid Request: JSON-RPC batches are not part of this protocol version",
                )));
            }
            Value::Array(items) => {
                if let Err(why) = check_batch(&items) {
                    return Err(refusal(&jsonrpc::invalid_request(Value::Null, why)));
                }
                Incoming::Batch(items)
            }
            value => match jsonrpc::classify(value) {
                Err(r) => return Err(refusal(&r)),
                Ok(Message::Response { id, outcome }) => Incoming::Response { id, outcome },
                Ok(Message::Notification { method, params }) => {
                    Incoming::Notification { method, params }
                }
                Ok(Message::Request { id, method, params }) => {
                    Incoming::Request { id, method, params }
                }
            },
        };
        Ok(Some(Admitted { message, held }))
    }
}

/// The most messages one batch may hold: a batch is answered as one reply,
/// so its size bounds that reply (a megabyte of `[1,1,…]` was answered with
/// 54 MB of errors, built in memory on a worker that served nothing else).
pub const MAX_BATCH: usize = 128;

/// A batch's size, and its requests' ids unique: each answer is told from
/// the others by its id alone.
fn check_batch(items: &[Value]) -> Result<(), String> {
    if items.len() > MAX_BATCH {
        return Err(format!(
            "Invalid Request: a batch holds at most {MAX_BATCH} messages (this one has {}); send them in several",
            items.len()
        ));
    }
    let mut ids = std::collections::HashSet::new();
    for item in items {
        if item.get("method").is_some()
            && let Some(id) = item.get("id").filter(|id| jsonrpc::valid_id(id))
            && !ids.insert(id.to_string())
        {
            return Err(format!(
                "Invalid Request: the batch holds two requests with id {}; give each its own",
                jsonrpc::shorten(&id.to_string(), 40)
            ));
        }
    }
    Ok(())
}

/// The reply for a refused message.
pub fn refusal(r: &Rejection) -> Value {
    jsonrpc::error_response(&r.id, &r.error)
}
