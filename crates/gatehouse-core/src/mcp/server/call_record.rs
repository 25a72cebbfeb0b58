//! The audit entry of one tool call, written however the call ends.
//!
//! A finished call is answered only once its entry is committed ([`CallAudit::finish`]):
//! when the entry cannot be written the caller gets that error instead of the
//! result (fail closed). A call cut short — the client cancelled it, or the
//! server stopped while it ran — is dropped mid-flight; the guard's `Drop`
//! then writes the entry with the outcome it reached (`cancelled` or
//! `interrupted`, and the tool's code if it had finished) on a task of its
//! own, which the server waits for before it exits ([`Late::wait`]).
//!
//! A server whose drain bound passed does not drop its calls first: it tells
//! them ([`Late::interrupting`], seen through [`Late::cut_short`]), and each
//! records itself `interrupted` ([`CallAudit::interrupted`]) and answers its
//! client with the shutdown error, so an accepted request is answered rather
//! than left with a closed connection. Only a call that cannot even do that
//! within [`ANSWER_GRACE`] is dropped.
//!
//! One bound per call: the work and its entry share [`CALL_BOUND`]; when the
//! work already found the database unreachable its entry gets only
//! [`RETRY_AFTER_UNREACHABLE`], so a call never waits twice for a dead (or
//! locked) database.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tools;
use crate::error::{Code, Error, Result, codes};
use crate::site::Site;
use crate::site::checkpoint;
use crate::sync::lock;

/// The most one call (its work and its entry) may take, above the longest tool
/// (`http_fetch`, 15 s) and one database connect timeout (10 s).
pub const CALL_BOUND: Duration = Duration::from_secs(30);
/// What an entry gets after the work itself found the database unreachable.
pub const RETRY_AFTER_UNREACHABLE: Duration = Duration::from_secs(1);
/// How long calls told to stop get to record themselves and answer before
/// the server drops them.
pub const ANSWER_GRACE: Duration = Duration::from_secs(5);
/// How long a call told to stop waits for its entry before it answers anyway
/// (the entry is still written; the server waits for it before it exits).
const ENTRY_GRACE: Duration = Duration::from_secs(2);

/// Entries being written for calls that were cut short, and whether the
/// server is abandoning its calls (then they are `interrupted`, not `cancelled`).
#[derive(Clone, Default)]
pub struct Late {
    handles: Arc<Mutex<Vec<JoinHandle<()>>>>,
    interrupting: Arc<AtomicBool>,
    cut: CancellationToken,
}

impl Late {
    /// Marks every call dropped from now on as interrupted by the server, and
    /// tells every call in flight to end now with its answer ([`Late::cut_short`]).
    pub fn interrupting(&self) {
        self.interrupting.store(true, Ordering::SeqCst);
        self.cut.cancel();
    }

    /// Resolves once the server stops waiting for its calls (its drain bound
    /// passed): a call racing its work against this ends with the shutdown
    /// error instead of being dropped without an answer.
    pub async fn cut_short(&self) {
        self.cut.cancelled().await;
    }

    /// Adds an entry being written (a cut-short call's, an abandoned hold's).
    pub(crate) fn push(&self, handle: JoinHandle<()>) {
        let mut v = lock(&self.handles);
        v.retain(|h| !h.is_finished());
        v.push(handle);
    }

    /// Waits (at most `bound`) for every late entry to be written.
    pub async fn wait(&self, bound: Duration) {
        let handles: Vec<_> = std::mem::take(&mut *lock(&self.handles));
        let all = async {
            for h in handles {
                let _ = h.await;
            }
        };
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::error!("audit entries of interrupted calls could not be written in time");
        }
    }
}

/// The pending entry of one call; see the module doc.
pub struct CallAudit {
    site: Site,
    label: String,
    tool: &'static str,
    /// The arguments' digest, all the entry keeps of them: a call waiting for
    /// its entry holds no copy beside the request's own, which the memory
    /// budget counts.
    args_sha256: String,
    late: Late,
    deadline: Instant,
    /// The tool's code once it finished (`Some(None)`: it succeeded).
    reached: Option<Option<Code>>,
    written: bool,
    /// Where the call came from (see `tools::record`).
    from: String,
    /// The OAuth grant a token's call went through.
    grant: Option<String>,
}

impl CallAudit {
    pub fn new(
        site: &Site,
        label: &str,
        tool: &'static str,
        args: &Value,
        late: Late,
    ) -> CallAudit {
        CallAudit {
            site: site.clone(),
            label: label.to_string(),
            tool,
            args_sha256: tools::args_digest(args),
            late,
            deadline: Instant::now() + CALL_BOUND,
            reached: None,
            written: false,
            from: String::new(),
            grant: None,
        }
    }

    /// Where the call came from, and through which OAuth grant if any.
    pub fn from(mut self, from: String, grant: Option<&str>) -> CallAudit {
        self.from = from;
        self.grant = grant.map(str::to_string);
        self
    }

    /// Starts the call's bound again: a held call's wait for a yes is not its work.
    pub fn bound_from_now(&mut self) {
        self.deadline = Instant::now() + CALL_BOUND;
    }

    /// No entry now: the call comes back (a 2026-07-28 client's retry with its
    /// user's answer) and gets its entry then; the ask is audited already.
    pub fn deferred(mut self) {
        self.written = true;
    }

    /// The digest of the call's arguments its entry will hold.
    pub fn args_sha256(&self) -> &str {
        &self.args_sha256
    }

    /// When the call's work must be done by.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Commits the entry of a finished call with `code` (`None`: success).
    /// The error, when it could not be committed, is what the caller must get.
    pub async fn finish(mut self, code: Option<Code>) -> Result<()> {
        self.reached = Some(code);
        let verdict = if code.is_some() { "error" } else { "ok" };
        // The work already waited out a dead or locked database (a fetch's
        // entry, written before it is sent, among them): one short try more.
        let short = matches!(
            code,
            Some(codes::DATABASE_UNREACHABLE | codes::DATABASE_LOCKED)
        );
        let deadline = if short {
            Instant::now() + RETRY_AFTER_UNREACHABLE
        } else {
            self.deadline
        };
        // Handed to the group commit as this is first polled, the entry is
        // committed whatever becomes of this call: dropped from here on (a
        // cancel, a stopping server), the call must not get a second one
        // (it had, `ok` and `cancelled` both).
        self.written = true;
        let written = tokio::time::timeout_at(
            deadline,
            tools::record(
                &self.site,
                &self.label,
                self.tool,
                &self.args_sha256,
                (verdict, code),
                (&self.from, self.grant.as_deref()),
            ),
        )
        .await;
        let seq = match written {
            Ok(Ok(seq)) => seq,
            Ok(Err(e)) => return Err(withheld(e, "not_written")),
            // Still queued: it may yet be written, so it is not said to
            // have failed (it had been, and then appeared in the log).
            Err(_) => {
                return Err(withheld(
                    if code == Some(codes::DATABASE_LOCKED) {
                        Error::new(
                        codes::DATABASE_LOCKED,
                        "the database stayed locked, so the call could not be recorded",
                    )
                    .hint("another process holds the site's database for writing; retry once it is done")
                    } else {
                        Error::new(
                            codes::DATABASE_UNREACHABLE,
                            "no answer from the database in time to record the call",
                        )
                        .hint("check that the database server is running, then retry the call")
                    },
                    "unconfirmed",
                ));
            }
        };
        // Signed after the answer, not before it: the entry is committed, and a
        // checkpoint (file writes, an fsync) every 100 calls, up to four a
        // second, is no call's cost.
        checkpoint::maybe_checkpoint(&self.site, seq, checkpoint::EVERY);
        Ok(())
    }

    /// Records a call the stopping server cut short (`interrupted`, with the
    /// code its client is answered with), waiting a little for the entry so
    /// the answer normally follows it; past that the entry is still written
    /// while the server stops ([`Late::wait`]).
    pub async fn interrupted(mut self, code: Code) {
        self.reached = Some(Some(code));
        let written = self.write_late("interrupted");
        self.written = true;
        if let Some(written) = written
            && tokio::time::timeout(ENTRY_GRACE, written).await.is_err()
        {
            tracing::warn!(
                tool = self.tool,
                "answering a cut-short call before its entry is written"
            );
        }
    }

    /// Writes the entry with `outcome` on a task of its own, which the server
    /// waits for before it exits; the receiver hears when it is done.
    fn write_late(&mut self, outcome: &'static str) -> Option<oneshot::Receiver<()>> {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                tool = self.tool,
                outcome,
                "no runtime left to record a cut-short call"
            );
            return None;
        };
        let (site, label, tool, args_sha256, from, grant) = (
            self.site.clone(),
            std::mem::take(&mut self.label),
            self.tool,
            std::mem::take(&mut self.args_sha256),
            std::mem::take(&mut self.from),
            self.grant.take(),
        );
        let code = self.reached.flatten();
        tracing::debug!(tool, outcome, "recording a call cut short");
        let (done, written) = oneshot::channel();
        self.late.push(rt.spawn(async move {
            let write = tools::record(
                &site,
                &label,
                tool,
                &args_sha256,
                (outcome, code),
                (&from, grant.as_deref()),
            );
            match tokio::time::timeout(CALL_BOUND, write).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::error!(tool, code = %e.code, "could not record a cut-short call")
                }
                Err(_) => tracing::error!(tool, "could not record a cut-short call in time"),
            }
            let _ = done.send(());
        }));
        Some(written)
    }
}

/// The error a caller gets when its call's entry could not be written
/// (`audit`: `not_written`), or not confirmed in time (`unconfirmed`: it
/// stays queued, and may be written once the database answers).
fn withheld(cause: Error, audit: &str) -> Error {
    let what = if audit == "not_written" {
        "could not be written"
    } else {
        "was not confirmed in time (it is written once the database answers, if it can be)"
    };
    let message = format!(
        "{}; the call's audit entry {what}, so its result is withheld",
        cause.message
    );
    let detail = serde_json::json!({"audit": audit});
    Error {
        message,
        detail: Some(detail),
        ..cause
    }
}

impl Drop for CallAudit {
    fn drop(&mut self) {
        if self.written {
            return;
        }
        let outcome = if self.late.interrupting.load(Ordering::SeqCst) {
            "interrupted"
        } else {
            "cancelled"
        };
        let _ = self.write_late(outcome);
    }
}
