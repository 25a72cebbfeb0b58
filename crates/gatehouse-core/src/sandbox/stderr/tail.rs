//! [`StderrTail`]: one connection's kept stderr (head, ring, counters), the
//! handle its reader pushes into, and [`drain`], that reader.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;

use super::budget::StderrBudget;
use super::render::{Cuts, redact_at_cuts, render_truncated, secret_safe_cut};
use super::ring::ByteRing;
use super::subscription::{SubQueue, SubShared, Subscription};
use crate::redact::Secrets;

/// A tail's byte counters at one moment, as records store them and the page
/// shows them: everything seen, what is kept, and whether anything was cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, ts_rs::TS)]
#[ts(rename = "TailCounters")]
pub struct StderrCounters {
    pub bytes_seen: u64,
    pub bytes_retained: u64,
    pub truncated: bool,
}

/// The per-connection and excerpt budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailLimits {
    /// First bytes kept verbatim (start-up errors and versions appear there).
    pub head_bytes: usize,
    /// Newest bytes kept in the ring buffer.
    pub tail_bytes: usize,
    /// Largest text, in bytes of UTF-8, handed to a UI, an error or an agent.
    pub excerpt_bytes: usize,
    /// Longest piece of a line sent to subscribers; longer lines arrive in pieces.
    pub line_bytes: usize,
    /// Bytes of lines a subscriber may have queued before new ones are dropped.
    pub subscriber_queue_bytes: usize,
}

impl Default for TailLimits {
    fn default() -> Self {
        Self {
            head_bytes: 2 * 1024,
            tail_bytes: 62 * 1024,
            excerpt_bytes: 4 * 1024,
            line_bytes: 4 * 1024,
            subscriber_queue_bytes: 64 * 1024,
        }
    }
}

/// Counters and kept text at one moment; what call records and errors carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TailSnapshot {
    /// Bytes the child wrote to stderr, up to where `text` ends.
    pub bytes_seen: u64,
    /// Bytes kept (head + tail), never more than the budgets allow.
    pub bytes_retained: u64,
    /// Whether any byte was dropped.
    pub truncated: bool,
    /// Bytes of the head kept.
    pub head_bytes: u64,
    /// Bytes of the tail kept.
    pub tail_bytes: u64,
    /// The kept bytes, decoded, with the marker when truncated.
    pub text: String,
    /// Where Gatehouse's marker sits in `text` (when it is there whole): the
    /// structured fact, so nobody has to search the text for it (a child can
    /// print a look-alike line).
    #[serde(skip)]
    pub marker_at: Option<Range<usize>>,
}

impl TailSnapshot {
    /// `text` split at the marker: the text before it (the kept head, each of
    /// its lines ended by a newline), the marker, and the text after the
    /// marker's line (the kept tail); without a marker, all of `text` is
    /// "before".
    pub fn parts(&self) -> (&str, Option<&str>, &str) {
        match &self.marker_at {
            Some(at) => {
                let after = &self.text[at.end..];
                let after = after.strip_prefix('\n').unwrap_or(after);
                (&self.text[..at.start], Some(&self.text[at.clone()]), after)
            }
            None => (&self.text, None, ""),
        }
    }
}

/// A shared handle on one connection's stderr. Cloning shares the same state.
#[derive(Debug, Clone)]
pub struct StderrTail {
    inner: Arc<Mutex<TailState>>,
}

#[derive(Debug)]
pub(super) struct TailState {
    limits: TailLimits,
    pool: Arc<StderrBudget>,
    /// Bytes reserved from `pool`; kept bytes never exceed it.
    reserved: usize,
    pub(super) head: Vec<u8>,
    /// Still accepting bytes: closed forever once one byte bypassed it, so the
    /// head is always a prefix of the stream.
    head_open: bool,
    ring: ByteRing,
    bytes_seen: u64,
    /// The unfinished line for subscribers (at most `line_bytes`).
    partial: Vec<u8>,
    /// `partial` continues a line already sent in pieces.
    partial_continues: bool,
    pub(super) subscribers: Vec<Arc<SubShared>>,
    ended: bool,
    /// A connection's secrets, replaced by `<redacted>` in every text handed
    /// out; counters stay raw.
    redact: Secrets,
}

impl Drop for TailState {
    fn drop(&mut self) {
        self.pool.release(self.reserved);
    }
}

impl StderrTail {
    /// A tail that reserves from the process-wide pool.
    pub fn new(limits: TailLimits) -> Self {
        Self::with_pool(limits, StderrBudget::process())
    }

    /// A tail that reserves from `pool`.
    pub fn with_pool(limits: TailLimits, pool: Arc<StderrBudget>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(TailState {
                limits,
                pool,
                reserved: 0,
                head: Vec::new(),
                head_open: true,
                ring: ByteRing::default(),
                bytes_seen: 0,
                partial: Vec::new(),
                partial_continues: false,
                subscribers: Vec::new(),
                ended: false,
                redact: Secrets::default(),
            })),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, TailState> {
        // A panic while holding the lock leaves counters consistent enough to read.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces these values by `<redacted>` in all text from now on (snapshots,
    /// excerpts, live lines), pieces of them at a cut included (see the module's
    /// "Secrets").
    pub fn set_redactions(&self, secrets: Secrets) {
        self.lock().redact = secrets;
    }

    /// Takes the next bytes the child wrote, however the pipe chunked them.
    pub fn push(&self, chunk: &[u8]) {
        let mut st = self.lock();
        st.keep(chunk);
        st.publish(chunk);
    }

    /// Marks end-of-file: flushes an unfinished line to subscribers and tells them.
    pub fn finish(&self) {
        let mut st = self.lock();
        if st.ended {
            return;
        }
        st.ended = true;
        if !st.partial.is_empty() {
            let line = std::mem::take(&mut st.partial);
            let line = st.line_text(&line, false);
            st.deliver(vec![line]);
        }
        for sub in &st.subscribers {
            sub.push_end();
        }
    }

    /// Whether the child's stderr reached end-of-file.
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    pub fn bytes_seen(&self) -> u64 {
        self.lock().bytes_seen
    }

    pub fn bytes_retained(&self) -> u64 {
        let st = self.lock();
        (st.head.len() + st.ring.len()) as u64
    }

    pub fn truncated(&self) -> bool {
        self.lock().truncated()
    }

    /// The counters in one lock, without rendering.
    pub fn counters(&self) -> StderrCounters {
        let st = self.lock();
        StderrCounters {
            bytes_seen: st.bytes_seen,
            bytes_retained: (st.head.len() + st.ring.len()) as u64,
            truncated: st.truncated(),
        }
    }

    /// Counters and the whole kept text.
    pub fn snapshot(&self) -> TailSnapshot {
        let st = self.lock();
        let ring = st.ring_bytes();
        st.snapshot_of(&st.head, &ring, st.bytes_seen, usize::MAX, st.ended)
    }

    /// Counters and a text of at most [`TailLimits::excerpt_bytes`] bytes: the
    /// newest bytes, with a little of the head when there is room.
    pub fn excerpt(&self) -> TailSnapshot {
        let st = self.lock();
        let ring = st.ring_bytes();
        st.snapshot_of(
            &st.head,
            &ring,
            st.bytes_seen,
            st.limits.excerpt_bytes,
            st.ended,
        )
    }

    /// A live feed of new lines from now on. Never blocks the reader: when this
    /// subscriber's queue is full, lines are dropped for it and counted.
    pub fn subscribe(&self) -> Subscription {
        self.follow().1
    }

    /// What was kept so far, up to the last complete line, and a live feed that
    /// starts exactly there, taken under one lock: a line written meanwhile is
    /// neither shown twice nor lost, and the unfinished line arrives whole.
    pub fn follow(&self) -> (TailSnapshot, Subscription) {
        let mut st = self.lock();
        let shared = Arc::new(SubShared {
            queue: Mutex::new(SubQueue::default()),
            notify: Notify::new(),
            cap: st.limits.subscriber_queue_bytes,
        });
        let ring = st.ring_bytes();
        if st.ended {
            shared.push_end();
            let snap = st.snapshot_of(&st.head, &ring, st.bytes_seen, usize::MAX, true);
            return (snap, Subscription { shared });
        }
        st.subscribers.retain(|s| Arc::strong_count(s) > 1);
        if st.subscribers.is_empty() {
            // Nobody tracked the unfinished line; take it from the kept bytes.
            (st.partial, st.partial_continues) = st.unfinished_line(&ring);
        }
        // The backlog stops where the unfinished line starts; the feed carries it.
        // (Only a pool-starved tail keeps less than the unfinished line.)
        let kept_after_cut = if st.truncated() {
            ring.len()
        } else {
            st.head.len() + ring.len()
        };
        let held = st.partial.len().min(kept_after_cut);
        let (head, ring) = if held <= ring.len() {
            (&st.head[..], &ring[..ring.len() - held])
        } else {
            (&st.head[..st.head.len() - (held - ring.len())], &[][..])
        };
        let snap = st.snapshot_of(head, ring, st.bytes_seen - held as u64, usize::MAX, true);
        st.subscribers.push(shared.clone());
        (snap, Subscription { shared })
    }
}

impl TailState {
    fn truncated(&self) -> bool {
        self.bytes_seen > self.bytes_retained()
    }

    fn bytes_retained(&self) -> u64 {
        (self.head.len() + self.ring.len()) as u64
    }

    pub(super) fn ring_bytes(&self) -> Vec<u8> {
        self.ring.to_vec()
    }

    /// The kept bytes after the last newline (at most a line piece, starting on
    /// a character boundary): the line the child is still writing, and whether
    /// its start is missing (cut by truncation or by the piece size).
    fn unfinished_line(&self, ring: &[u8]) -> (Vec<u8>, bool) {
        let joined;
        let kept: &[u8] = if self.truncated() {
            ring
        } else {
            joined = [&self.head[..], ring].concat();
            &joined
        };
        let newline = kept.iter().rposition(|&b| b == b'\n');
        let line_start = newline.map_or(0, |i| i + 1);
        let mut start = line_start.max(kept.len().saturating_sub(self.limits.line_bytes.max(4)));
        while start < kept.len() && kept[start] & 0xC0 == 0x80 {
            start += 1;
        }
        let continues = start > line_start || (newline.is_none() && self.truncated());
        (kept[start..].to_vec(), continues)
    }

    /// Grows the reservation towards `want` total kept bytes; returns what is held.
    fn reserve_up_to(&mut self, want: usize) -> usize {
        if want > self.reserved {
            self.reserved += self.pool.reserve(want - self.reserved);
        }
        self.reserved
    }

    fn keep(&mut self, mut chunk: &[u8]) {
        self.bytes_seen += chunk.len() as u64;
        if self.head_open {
            let want = (self.head.len() + chunk.len()).min(self.limits.head_bytes);
            let cap = self.reserve_up_to(want).min(self.limits.head_bytes);
            let take = cap.saturating_sub(self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if !chunk.is_empty() {
                self.head_open = false;
            }
        }
        if chunk.is_empty() {
            return;
        }
        let want_tail = (self.ring.len() + chunk.len()).min(self.limits.tail_bytes);
        let cap = self
            .reserve_up_to(self.head.len() + want_tail)
            .saturating_sub(self.head.len())
            .min(self.limits.tail_bytes);
        self.ring.push_evicting(chunk, cap);
    }

    /// Splits `chunk` into lines for subscribers; a line is sent once complete,
    /// or in pieces of `line_bytes` when it runs longer.
    fn publish(&mut self, chunk: &[u8]) {
        if self.subscribers.is_empty() {
            return;
        }
        let max = self.limits.line_bytes.max(4);
        let mut lines = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            // `partial` never exceeds `max`; look one byte past the room so a
            // line of exactly `max` bytes is not split from its newline.
            let room = max - self.partial.len();
            let look = &rest[..rest.len().min(room + 1)];
            if let Some(nl) = look.iter().position(|&b| b == b'\n') {
                self.partial.extend_from_slice(&look[..nl]);
                let line = std::mem::take(&mut self.partial);
                lines.push(self.line_text(&line, false));
                self.partial_continues = false;
                rest = &rest[nl + 1..];
            } else if look.len() == room + 1 {
                // Longer than a piece: send `max` bytes, cut at a character
                // boundary and before any secret's start; the remainder starts
                // the next piece.
                self.partial.extend_from_slice(&rest[..room]);
                rest = &rest[room..];
                let cut = secret_safe_cut(&self.partial, &self.redact);
                let carry = self.partial.split_off(cut);
                let piece = std::mem::replace(&mut self.partial, carry);
                lines.push(self.line_text(&piece, true));
                self.partial_continues = true;
            } else {
                self.partial.extend_from_slice(look);
                rest = &[];
            }
        }
        if !lines.is_empty() {
            self.deliver(lines);
        }
    }

    /// A live line (or piece of one) as text, redacted; `cut_end` when the line
    /// goes on in the next piece.
    fn line_text(&self, bytes: &[u8], cut_end: bool) -> String {
        let text = String::from_utf8_lossy(bytes).into_owned();
        redact_at_cuts(&self.redact, text, self.partial_continues, cut_end)
    }

    fn deliver(&mut self, lines: Vec<String>) {
        // Drop subscribers whose receiver is gone.
        self.subscribers.retain(|s| Arc::strong_count(s) > 1);
        for sub in &self.subscribers {
            sub.push_lines(&lines);
        }
    }

    /// Counters and the text of `head` + `ring` out of the first `seen` bytes, within
    /// `max_text`; `whole_end` when nothing follows the ring's last byte (the
    /// stream ended, or the text stops at a line the caller holds back).
    fn snapshot_of(
        &self,
        head: &[u8],
        ring: &[u8],
        seen: u64,
        max_text: usize,
        whole_end: bool,
    ) -> TailSnapshot {
        let retained = (head.len() + ring.len()) as u64;
        let truncated = seen > retained;
        let cuts = Cuts {
            secrets: &self.redact,
            open_end: !whole_end,
        };
        let (text, marker_at) = if truncated {
            render_truncated(head, ring, seen, max_text, &cuts)
        } else {
            // Nothing dropped: head and ring are contiguous, decode them as one.
            let all = [head, ring].concat();
            let whole = redact_at_cuts(
                &self.redact,
                String::from_utf8_lossy(&all).into_owned(),
                false,
                cuts.open_end,
            );
            if whole.len() <= max_text {
                (whole, None)
            } else {
                render_truncated(head, ring, seen, max_text, &cuts)
            }
        };
        TailSnapshot {
            bytes_seen: seen,
            bytes_retained: retained,
            truncated,
            head_bytes: head.len() as u64,
            tail_bytes: ring.len() as u64,
            text,
            marker_at,
        }
    }
}

/// Reads `reader` to end-of-file into `tail`, then marks the end. Returns the
/// bytes read; the reader never waits on a subscriber or a budget.
pub async fn drain<R: AsyncRead + Unpin>(mut reader: R, tail: &StderrTail) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    let result = loop {
        match reader.read(&mut buf).await {
            Ok(0) => break Ok(total),
            Ok(n) => {
                total += n as u64;
                tail.push(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
    };
    tail.finish();
    result
}
