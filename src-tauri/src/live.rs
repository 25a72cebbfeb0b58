//! What the Connections screen keeps between commands besides the
//! connections themselves: the stderr streams it opened (several at once,
//! each stopped by its id), the cancel handle of each running call, and the
//! full results of recent calls (the page gets a cut view; "save to a file"
//! writes the whole one).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use gatehouse_core::Error;
use gatehouse_core::error::codes;
use gatehouse_core::mcp::client::CancellationToken;
use gatehouse_core::sync::lock;
use serde_json::Value;

/// Full results kept for saving; older ones are forgotten.
pub const KEPT_RESULTS: usize = 16;

/// An id the page chose for a stream or a call: 1–64 of `[A-Za-z0-9_-]`.
pub fn check_id(id: &str) -> Result<(), Error> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("{id:?} is not a valid id"),
            "use 1-64 letters, digits, '-' or '_'",
        ))
    }
}

/// Cancel handles by the id the page gave: one map for stderr streams, one
/// for running calls. Each registration has a generation, so a stream that
/// ends by itself does not forget a newer one of the same id.
#[derive(Debug, Default)]
pub struct Handles(Mutex<Registrations>);

/// The next generation, and each id's generation and token.
type Registrations = (u64, HashMap<String, (u64, CancellationToken)>);

/// A registered handle: cancel it with [`Handles::cancel`], forget it with [`Handles::end`].
#[derive(Debug, Clone)]
pub struct Handle {
    pub generation: u64,
    pub token: CancellationToken,
}

impl Handles {
    /// Registers `id` (replacing and cancelling an older one of the same id).
    pub fn begin(&self, id: &str) -> Handle {
        let token = CancellationToken::new();
        let mut inner = lock(&self.0);
        inner.0 += 1;
        let generation = inner.0;
        if let Some((_, old)) = inner.1.insert(id.to_string(), (generation, token.clone())) {
            old.cancel();
        }
        Handle { generation, token }
    }

    /// Cancels `id`; false if it is not running.
    pub fn cancel(&self, id: &str) -> bool {
        match lock(&self.0).1.remove(id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Forgets `id` once it ended by itself, unless a newer one took the id.
    pub fn end(&self, id: &str, handle: &Handle) {
        let mut inner = lock(&self.0);
        if inner
            .1
            .get(id)
            .is_some_and(|(g, _)| *g == handle.generation)
        {
            inner.1.remove(id);
        }
    }

    /// Cancels everything (the site changed).
    pub fn cancel_all(&self) {
        for (_, (_, token)) in lock(&self.0).1.drain() {
            token.cancel();
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.0).1.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The full results of the last [`KEPT_RESULTS`] calls, by call id.
#[derive(Debug, Default)]
pub struct Results(Mutex<VecDeque<(String, Value)>>);

impl Results {
    pub fn keep(&self, call_id: &str, result: Value) {
        let mut kept = lock(&self.0);
        if kept.len() == KEPT_RESULTS {
            kept.pop_front();
        }
        kept.push_back((call_id.to_string(), result));
    }

    pub fn get(&self, call_id: &str) -> Result<Value, Error> {
        lock(&self.0)
            .iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                Error::invalid(
                    codes::CALL_RESULT_NOT_KEPT,
                    format!("the result of {call_id} is no longer kept"),
                    format!(
                        "the window keeps the last {KEPT_RESULTS} results; call the tool again"
                    ),
                )
            })
    }

    pub fn clear(&self) {
        lock(&self.0).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_checked() {
        assert!(check_id("tail-1_a").is_ok());
        for bad in ["", "a b", "../x", &"x".repeat(65)] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn handles_cancel_by_id_and_a_new_one_replaces_the_old() {
        let h = Handles::default();
        let first = h.begin("s1");
        let second = h.begin("s1");
        assert!(first.token.is_cancelled(), "replaced");
        assert!(!second.token.is_cancelled());
        // The old stream ending does not forget the new one.
        h.end("s1", &first);
        assert_eq!(h.len(), 1);
        let other = h.begin("s2");
        assert!(h.cancel("s1"));
        assert!(second.token.is_cancelled() && !other.token.is_cancelled());
        assert!(!h.cancel("s1"), "already gone");
        h.cancel_all();
        assert!(other.token.is_cancelled() && h.is_empty());
    }

    #[test]
    fn only_the_last_results_are_kept() {
        let r = Results::default();
        for i in 0..=KEPT_RESULTS {
            r.keep(&format!("call_{i}"), json!(i));
        }
        assert_eq!(
            r.get("call_0").unwrap_err().code,
            codes::CALL_RESULT_NOT_KEPT
        );
        assert_eq!(
            r.get(&format!("call_{KEPT_RESULTS}")).unwrap(),
            json!(KEPT_RESULTS)
        );
    }
}
