//! A child's stderr, kept within budgets: a short head, a ring buffer of the
//! newest bytes, exact counters, and live subscribers that can never make the
//! reader wait.
//!
//! Map: [`StderrBudget`] is the process-wide pool every tail reserves from;
//! [`TailLimits`] are the per-connection and excerpt budgets; [`StderrTail`] is
//! the shared handle the connection's reader pushes into ([`drain`] reads a pipe
//! to end-of-file); [`TailSnapshot`] is what records and errors carry;
//! [`Subscription`] receives new lines as [`TailEvent`]s.
//!
//! Rules (see `stderr-design.md`): count bytes, not lines; keep the first
//! [`TailLimits::head_bytes`] bytes (start-up errors, versions) and the newest
//! [`TailLimits::tail_bytes`] bytes (the error, usually); decode only what is kept,
//! lossily, at the end, so the kept text does not depend on how the pipe chunked
//! the stream.
//!
//! # Truncation marker
//! When bytes were dropped, the rendered text carries a marker written by
//! Gatehouse, alone on its line, where the bytes are missing. `N` is the number
//! of tail bytes kept, `M` the number of bytes the child wrote, `H` the head kept:
//!
//! - no head kept: `[stderr truncated: kept last N of M bytes]` first, then the tail;
//! - head kept: the head, then `[stderr truncated: kept first H and last N of M bytes]`,
//!   then the tail.
//!
//! A newline is inserted before the marker if the head does not end with one, and
//! one always follows the marker. Numbers are raw byte counts, before decoding.
//!
//! # Caveats
//! A character cut in two by Gatehouse's own cut (the end of the head, the start of
//! the tail) is dropped rather than shown as U+FFFD, since the child did not write
//! it broken; bytes the child wrote invalid are shown as U+FFFD.
//!
//! # Secrets
//! A connection's secret values are replaced by `<redacted>` in every text handed
//! out. Where a cut (the end of the head, the start of the tail, the unfinished
//! end of a live stream) splits a secret, the piece left at the cut is redacted
//! too once it is at least [`MIN_PARTIAL_SECRET`] bytes long; a shorter piece
//! cannot be told from ordinary text and gives little away. Live line pieces are
//! cut before a secret, never through it, unless the secret is longer than a piece.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;

/// The shortest piece of a secret, left at a cut, that is redacted (see the
/// module's "Secrets").
pub const MIN_PARTIAL_SECRET: usize = 4;

const REDACTED: &str = "<redacted>";

/// Default for the process-wide pool: fifty flooding connections under their
/// own caps still fit in it, and it is small next to the host's memory.
pub const DEFAULT_PROCESS_BUDGET: usize = 8 * 1024 * 1024;

/// The process-wide stderr budget: every tail reserves the bytes it keeps from
/// it, and gives them back when dropped, so all connections together never keep
/// more than `limit` bytes of stderr.
#[derive(Debug)]
pub struct StderrBudget {
    limit: usize,
    used: AtomicUsize,
}

impl StderrBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The pool shared by every connection of this process unless a caller
    /// passes its own (tests do).
    pub fn process() -> Arc<Self> {
        static POOL: OnceLock<Arc<StderrBudget>> = OnceLock::new();
        POOL.get_or_init(|| StderrBudget::new(DEFAULT_PROCESS_BUDGET))
            .clone()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes currently reserved by live tails.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Grants up to `want` bytes (possibly 0) and returns how many.
    fn reserve(&self, want: usize) -> usize {
        let mut granted = 0;
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                granted = want.min(self.limit.saturating_sub(used));
                (granted > 0).then_some(used + granted)
            });
        granted
    }

    fn release(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::AcqRel);
        }
    }
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
}

/// What a live subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailEvent {
    /// Complete lines (without their newline), coalesced: one event may carry
    /// many lines. A line longer than [`TailLimits::line_bytes`] arrives in pieces.
    Lines(Vec<String>),
    /// This subscriber was too slow: these lines and their bytes were dropped
    /// for it (and only for it) at this point of the stream.
    Missed { lines: u64, bytes: u64 },
    /// The stream ended; the final line may have lacked a newline.
    End,
}

/// A shared handle on one connection's stderr. Cloning shares the same state.
#[derive(Debug, Clone)]
pub struct StderrTail {
    inner: Arc<Mutex<TailState>>,
}

#[derive(Debug)]
struct TailState {
    limits: TailLimits,
    pool: Arc<StderrBudget>,
    /// Bytes reserved from `pool`; kept bytes never exceed it.
    reserved: usize,
    head: Vec<u8>,
    /// Still accepting bytes: closed forever once one byte bypassed it, so the
    /// head is always a prefix of the stream.
    head_open: bool,
    ring: ByteRing,
    bytes_seen: u64,
    /// The unfinished line for subscribers (at most `line_bytes`).
    partial: Vec<u8>,
    /// `partial` continues a line already sent in pieces.
    partial_continues: bool,
    subscribers: Vec<Arc<SubShared>>,
    ended: bool,
    /// Values (a connection's secrets) replaced by `<redacted>` in every text
    /// handed out; counters stay raw.
    redact: Vec<String>,
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
                redact: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, TailState> {
        // A panic while holding the lock leaves counters consistent enough to read.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces these values by `<redacted>` in all text from now on (snapshots,
    /// excerpts, live lines), pieces of them at a cut included (see the module's
    /// "Secrets").
    pub fn set_redactions(&self, values: Vec<String>) {
        self.lock().redact = values.into_iter().filter(|v| !v.is_empty()).collect();
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

    /// `(bytes_seen, bytes_retained, truncated)` in one lock, without rendering.
    pub fn snapshot_counters(&self) -> (u64, u64, bool) {
        let st = self.lock();
        (
            st.bytes_seen,
            (st.head.len() + st.ring.len()) as u64,
            st.truncated(),
        )
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

    fn ring_bytes(&self) -> Vec<u8> {
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
        let text = if truncated {
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
                whole
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
        }
    }
}

/// A byte ring buffer whose capacity only grows, exactly (the budget counts
/// bytes, so the buffer must not double past it), and whose writes are memcpys
/// (a flood passes through it at pipe speed).
#[derive(Debug, Default)]
struct ByteRing {
    buf: Vec<u8>,
    /// Index of the oldest byte.
    start: usize,
    len: usize,
}

impl ByteRing {
    fn len(&self) -> usize {
        self.len
    }

    fn to_vec(&self) -> Vec<u8> {
        let cap = self.buf.len();
        if cap == 0 {
            return Vec::new();
        }
        let first = (cap - self.start).min(self.len);
        let mut out = Vec::with_capacity(self.len);
        out.extend_from_slice(&self.buf[self.start..self.start + first]);
        out.extend_from_slice(&self.buf[..self.len - first]);
        out
    }

    /// Appends `chunk`, evicting the oldest bytes beyond `cap`.
    fn push_evicting(&mut self, chunk: &[u8], cap: usize) {
        if cap > self.buf.len() {
            // Grow: lay the contents out from 0 in a buffer of exactly `cap`.
            let mut grown = self.to_vec();
            grown.resize(cap, 0);
            self.buf = grown;
            self.start = 0;
        }
        let cap = self.buf.len();
        if cap == 0 {
            return;
        }
        if chunk.len() >= cap {
            self.buf.copy_from_slice(&chunk[chunk.len() - cap..]);
            self.start = 0;
            self.len = cap;
            return;
        }
        let mut end = (self.start + self.len) % cap;
        let first = (cap - end).min(chunk.len());
        self.buf[end..end + first].copy_from_slice(&chunk[..first]);
        self.buf[..chunk.len() - first].copy_from_slice(&chunk[first..]);
        end = (end + chunk.len()) % cap;
        let total = self.len + chunk.len();
        if total > cap {
            self.len = cap;
            self.start = end;
        } else {
            self.len = total;
        }
    }
}

/// The marker text for `head` and `tail` raw byte counts out of `seen`.
pub fn marker(head: u64, tail: u64, seen: u64) -> String {
    if head == 0 {
        format!("[stderr truncated: kept last {tail} of {seen} bytes]")
    } else {
        format!("[stderr truncated: kept first {head} and last {tail} of {seen} bytes]")
    }
}

/// What rendering needs to redact at the cuts it makes.
struct Cuts<'a> {
    secrets: &'a [String],
    /// The kept bytes end where the child is still writing.
    open_end: bool,
}

/// Renders head + marker + tail within `max_text` bytes, shrinking the shown
/// head and tail (the marker then counts what is shown, so it stays exact).
/// The tail gets the room first (it usually holds the error), the head at most a
/// quarter of the budget unless the tail leaves more.
fn render_truncated(head: &[u8], tail: &[u8], seen: u64, max_text: usize, cuts: &Cuts) -> String {
    let fits = |h: usize, t: usize| {
        render_parts(&head[..h], &tail[tail.len() - t..], seen, cuts).len() <= max_text
    };
    // Largest n in lo..=hi with ok(n), given ok(lo); lossy decoding can make the
    // length step unevenly, so search rather than subtract.
    let largest = |lo: usize, hi: usize, ok: &dyn Fn(usize) -> bool| {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if ok(mid) { lo = mid } else { hi = mid - 1 }
        }
        lo
    };
    if !fits(0, 0) {
        // Not even the marker fits: cut it, on a character boundary.
        let text = render_parts(&[], &[], seen, cuts);
        let mut end = max_text.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return text[..end].to_string();
    }
    let mut h = largest(0, head.len().min(max_text / 4), &|h| fits(h, 0));
    let t = largest(0, tail.len(), &|t| fits(h, t));
    if t == tail.len() {
        h = largest(h, head.len(), &|h| fits(h, t));
    }
    render_parts(&head[..h], &tail[tail.len() - t..], seen, cuts)
}

fn render_parts(head: &[u8], tail: &[u8], seen: u64, cuts: &Cuts) -> String {
    // Bytes are missing between head and tail: both sides of the gap are cuts.
    let head_text = redact_at_cuts(cuts.secrets, decode_trim_end(head), false, true);
    let tail_text = redact_at_cuts(cuts.secrets, decode_trim_start(tail), true, cuts.open_end);
    let marker = marker(head.len() as u64, tail.len() as u64, seen);
    let mut out = String::with_capacity(head_text.len() + marker.len() + tail_text.len() + 2);
    out.push_str(&head_text);
    if !head_text.is_empty() && !head_text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out.push('\n');
    out.push_str(&tail_text);
    out
}

/// Replaces every whole secret, then the piece of one left at a cut: the end of
/// a secret at the start of `text` (`cut_start`), the start of one at its end
/// (`cut_end`).
fn redact_at_cuts(secrets: &[String], text: String, cut_start: bool, cut_end: bool) -> String {
    let mut text = secrets.iter().fold(text, |t, s| {
        if t.contains(s.as_str()) {
            t.replace(s.as_str(), REDACTED)
        } else {
            t
        }
    });
    if cut_end
        && let Some(n) = longest_piece(secrets, MIN_PARTIAL_SECRET, |s, n| {
            s.is_char_boundary(n) && text.ends_with(&s[..n])
        })
    {
        text.truncate(text.len() - n);
        text.push_str(REDACTED);
    }
    if cut_start
        && let Some(n) = longest_piece(secrets, MIN_PARTIAL_SECRET, |s, n| {
            s.is_char_boundary(s.len() - n) && text.starts_with(&s[s.len() - n..])
        })
    {
        text.replace_range(..n, REDACTED);
    }
    text
}

/// The longest proper piece (`min` bytes or more, shorter than the whole) of
/// any secret for which `at_edge(secret, length)` holds.
fn longest_piece(
    secrets: &[String],
    min: usize,
    at_edge: impl Fn(&str, usize) -> bool,
) -> Option<usize> {
    secrets
        .iter()
        .filter_map(|s| (min..s.len()).rev().find(|&n| at_edge(s, n)))
        .max()
}

/// Where a live piece of `bytes` may end: on a character boundary, and before
/// the start of a secret that runs past it (when the piece keeps at least one byte).
fn secret_safe_cut(bytes: &[u8], secrets: &[String]) -> usize {
    let cut = utf8_safe_cut(bytes);
    let kept = &bytes[..cut];
    let held_back =
        longest_piece(secrets, 1, |s, n| kept.ends_with(&s.as_bytes()[..n])).unwrap_or(0);
    if held_back < cut {
        cut - held_back
    } else {
        cut
    }
}

/// Decodes a head whose end Gatehouse cut: an incomplete final character is
/// dropped, not shown as U+FFFD.
fn decode_trim_end(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..incomplete_suffix_start(bytes)]).into_owned()
}

/// Decodes a tail whose start Gatehouse cut: up to three leading continuation
/// bytes (the rest of a character whose start was evicted) are dropped.
fn decode_trim_start(bytes: &[u8]) -> String {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    String::from_utf8_lossy(&bytes[skip..]).into_owned()
}

/// Where an incomplete UTF-8 sequence at the end of `bytes` starts (or
/// `bytes.len()` if it ends on a whole character or on invalid bytes).
fn incomplete_suffix_start(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let i = bytes.len() - back;
        let b = bytes[i];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return bytes.len(),
        };
        return if need > back { i } else { bytes.len() };
    }
    bytes.len()
}

/// Index at which `bytes` can be cut without splitting a character.
fn utf8_safe_cut(bytes: &[u8]) -> usize {
    let cut = incomplete_suffix_start(bytes);
    if cut == 0 { bytes.len() } else { cut }
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

#[derive(Debug)]
struct SubShared {
    queue: Mutex<SubQueue>,
    notify: Notify,
    cap: usize,
}

#[derive(Debug, Default)]
struct SubQueue {
    events: VecDeque<TailEvent>,
    /// Bytes of lines queued (the bound).
    bytes: usize,
    /// The stream ended; `End` is handed out once the queue is empty.
    end: bool,
    end_taken: bool,
}

impl SubShared {
    fn lock(&self) -> MutexGuard<'_, SubQueue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push_lines(&self, lines: &[String]) {
        let mut q = self.lock();
        let mut missed_lines = 0u64;
        let mut missed_bytes = 0u64;
        let mut fresh = Vec::new();
        for line in lines {
            // One byte for the newline, so empty lines count too.
            let cost = line.len() + 1;
            if missed_lines == 0 && q.bytes + cost <= self.cap {
                q.bytes += cost;
                fresh.push(line.clone());
            } else {
                // Once one line is dropped, later ones in this batch are dropped
                // too, so what arrives stays in order around the gap.
                missed_lines += 1;
                missed_bytes += cost as u64;
            }
        }
        if !fresh.is_empty() {
            // Coalesce into the newest queued batch.
            match q.events.back_mut() {
                Some(TailEvent::Lines(prev)) => prev.extend(fresh),
                _ => q.events.push_back(TailEvent::Lines(fresh)),
            }
        }
        if missed_lines > 0 {
            // A gap notice is constant-size, so it may sit past the bound;
            // consecutive gaps merge into one.
            match q.events.back_mut() {
                Some(TailEvent::Missed { lines, bytes }) => {
                    *lines += missed_lines;
                    *bytes += missed_bytes;
                }
                _ => q.events.push_back(TailEvent::Missed {
                    lines: missed_lines,
                    bytes: missed_bytes,
                }),
            }
        }
        drop(q);
        self.notify.notify_one();
    }

    fn push_end(&self) {
        self.lock().end = true;
        self.notify.notify_one();
    }
}

/// A live subscriber's end: [`Subscription::recv`] returns events in stream
/// order, `None` after [`TailEvent::End`].
#[derive(Debug)]
pub struct Subscription {
    shared: Arc<SubShared>,
}

impl Subscription {
    /// The next event, waiting for one; `None` once the end was delivered.
    pub async fn recv(&mut self) -> Option<TailEvent> {
        loop {
            // `Notify` keeps a permit when nobody waits, so no wake-up is lost
            // between this check and the await.
            if let Some(ev) = self.try_recv() {
                return Some(ev);
            }
            if self.shared.lock().end_taken {
                return None;
            }
            self.shared.notify.notified().await;
        }
    }

    /// The next queued event, without waiting.
    pub fn try_recv(&mut self) -> Option<TailEvent> {
        let mut q = self.shared.lock();
        if let Some(ev) = q.events.pop_front() {
            if let TailEvent::Lines(lines) = &ev {
                q.bytes -= lines.iter().map(|l| l.len() + 1).sum::<usize>();
            }
            return Some(ev);
        }
        if q.end && !q.end_taken {
            q.end_taken = true;
            return Some(TailEvent::End);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(head: usize, tail: usize) -> TailLimits {
        TailLimits {
            head_bytes: head,
            tail_bytes: tail,
            excerpt_bytes: 256,
            line_bytes: 16,
            subscriber_queue_bytes: 64,
        }
    }

    fn tail(head: usize, t: usize) -> StderrTail {
        StderrTail::with_pool(limits(head, t), StderrBudget::new(usize::MAX))
    }

    #[test]
    fn short_stream_is_kept_whole_without_marker() {
        let t = tail(4, 8);
        t.push(b"hello\n");
        let s = t.snapshot();
        assert_eq!(s.text, "hello\n");
        assert_eq!((s.bytes_seen, s.bytes_retained, s.truncated), (6, 6, false));
        assert_eq!((s.head_bytes, s.tail_bytes), (4, 2));
    }

    #[test]
    fn truncated_stream_has_exact_marker_between_head_and_tail() {
        let t = tail(4, 6);
        t.push(b"abcdefghijklmnopqrst");
        let s = t.snapshot();
        assert_eq!(
            s.text,
            "abcd\n[stderr truncated: kept first 4 and last 6 of 20 bytes]\nopqrst"
        );
        assert_eq!(
            (s.bytes_seen, s.bytes_retained, s.truncated),
            (20, 10, true)
        );
    }

    #[test]
    fn without_head_the_marker_comes_first() {
        let t = tail(0, 3);
        t.push(b"line1\nline2\n");
        assert_eq!(
            t.snapshot().text,
            "[stderr truncated: kept last 3 of 12 bytes]\ne2\n"
        );
    }

    #[test]
    fn character_split_by_the_cut_is_dropped_not_mangled() {
        // "é" is C3 A9; the tail's first byte is A9.
        let t = tail(3, 4);
        t.push("ab\u{e9}xyz\u{e9}q".as_bytes());
        // 10 bytes: head = "ab" C3 (cut inside "é"), tail = "z" C3 A9 "q".
        let s = t.snapshot();
        assert_eq!(
            s.text,
            "ab\n[stderr truncated: kept first 3 and last 4 of 10 bytes]\nz\u{e9}q"
        );
        let t = tail(0, 4);
        t.push("xyz\u{e9}abc".as_bytes());
        assert_eq!(
            t.snapshot().text,
            "[stderr truncated: kept last 4 of 8 bytes]\nabc"
        );
    }

    #[tokio::test]
    async fn secrets_are_redacted_in_every_text_but_counted_raw() {
        let t = tail(0, 64);
        t.set_redactions(vec!["hunter2".into()]);
        let mut sub = t.subscribe();
        t.push(b"token=hunter2 ok\n");
        let s = t.snapshot();
        assert_eq!(s.text, "token=<redacted> ok\n");
        assert_eq!(s.bytes_seen, 17);
        assert_eq!(
            sub.recv().await,
            Some(TailEvent::Lines(vec!["token=<redacted> ok".into()]))
        );
        assert!(!t.excerpt().text.contains("hunter2"));
    }

    #[test]
    fn a_secret_cut_by_truncation_is_redacted_on_both_sides_of_the_gap() {
        const SECRET: &str = "s3cr3t-value-42";
        let t = tail(10, 12);
        t.set_redactions(vec![SECRET.into()]);
        // Head "key=s3cr3t" ends inside the secret; the gap swallows the middle
        // of the second one, and the tail starts inside it.
        t.push(format!("key={SECRET} pad pad pad {SECRET} end\n").as_bytes());
        let s = t.snapshot();
        assert_eq!(
            s.text,
            "key=<redacted>\n[stderr truncated: kept first 10 and last 12 of 52 bytes]\n<redacted> end\n"
        );
        // Excerpts cut again, with the same rule.
        for max in 40..s.text.len() + 8 {
            let mut l = limits(10, 12);
            l.excerpt_bytes = max;
            let t = StderrTail::with_pool(l, StderrBudget::new(usize::MAX));
            t.set_redactions(vec![SECRET.into()]);
            t.push(format!("key={SECRET} pad pad pad {SECRET} end\n").as_bytes());
            let text = t.excerpt().text;
            for piece in SECRET.as_bytes().windows(MIN_PARTIAL_SECRET) {
                let piece = std::str::from_utf8(piece).unwrap();
                assert!(!text.contains(piece), "{piece:?} in {text:?}");
            }
        }
    }

    #[test]
    fn a_secret_still_being_written_is_redacted_at_the_open_end() {
        let t = tail(0, 64);
        t.set_redactions(vec!["hunter2hunter2".into()]);
        t.push(b"token=hunter2h");
        assert_eq!(t.snapshot().text, "token=<redacted>");
        t.push(b"unter2 ok");
        t.finish();
        assert_eq!(t.snapshot().text, "token=<redacted> ok");
    }

    #[tokio::test]
    async fn live_pieces_of_a_long_line_never_split_a_secret() {
        const SECRET: &str = "0123456789";
        let mut l = limits(0, 1024);
        l.subscriber_queue_bytes = 1 << 20;
        let t = StderrTail::with_pool(l, StderrBudget::new(usize::MAX));
        t.set_redactions(vec![SECRET.into()]);
        let mut sub = t.subscribe();
        // Every offset of the secret against the 16-byte piece edge.
        let line: String = (0..16)
            .map(|i| format!("{}{SECRET}", "x".repeat(i)))
            .collect();
        t.push(format!("{line}\n").as_bytes());
        t.finish();
        let mut pieces = Vec::new();
        while let Some(TailEvent::Lines(l)) = sub.recv().await {
            pieces.extend(l);
        }
        let joined = pieces.concat();
        assert_eq!(joined, line.replace(SECRET, "<redacted>"));
        assert!(
            pieces
                .iter()
                .all(|p| p.len() <= 16 || p.contains("<redacted>"))
        );
        for p in &pieces {
            assert!(!p.contains("0123"), "{p:?}");
        }
    }

    #[tokio::test]
    async fn follow_hands_over_without_repeating_or_losing_a_line() {
        let t = tail(0, 1024);
        t.push(b"one\ntwo\nthr");
        let (backlog, mut sub) = t.follow();
        assert_eq!(backlog.text, "one\ntwo\n");
        assert_eq!(backlog.bytes_seen, 8);
        t.push(b"ee\nfour\n");
        assert_eq!(
            sub.recv().await,
            Some(TailEvent::Lines(vec!["three".into(), "four".into()]))
        );
        // A second follower while the first one is tracking a line.
        t.push(b"fi");
        let (backlog, mut second) = t.follow();
        assert_eq!(backlog.text, "one\ntwo\nthree\nfour\n");
        t.push(b"ve\n");
        t.finish();
        for s in [&mut sub, &mut second] {
            assert_eq!(s.recv().await, Some(TailEvent::Lines(vec!["five".into()])));
            assert_eq!(s.recv().await, Some(TailEvent::End));
        }
        // After the end, the backlog is everything.
        let (backlog, mut late) = t.follow();
        assert_eq!(backlog.text, "one\ntwo\nthree\nfour\nfive\n");
        assert_eq!(late.recv().await, Some(TailEvent::End));
    }

    #[tokio::test]
    async fn follow_of_a_truncated_tail_keeps_the_marker_exact() {
        let t = tail(4, 10);
        t.push(b"abc\n0123456789\nxy");
        let (backlog, mut sub) = t.follow();
        // The tail's last 10 bytes are "3456789\nxy"; "xy" is held for the feed.
        assert_eq!(
            backlog.text,
            "abc\n[stderr truncated: kept first 4 and last 8 of 15 bytes]\n3456789\n"
        );
        assert_eq!(
            marker(backlog.head_bytes, backlog.tail_bytes, backlog.bytes_seen),
            "[stderr truncated: kept first 4 and last 8 of 15 bytes]"
        );
        t.push(b"z\n");
        assert_eq!(sub.recv().await, Some(TailEvent::Lines(vec!["xyz".into()])));
    }

    #[test]
    fn invalid_bytes_written_by_the_child_show_as_replacement() {
        let t = tail(0, 64);
        t.push(b"bad \xff\xfe end");
        assert_eq!(t.snapshot().text, "bad \u{fffd}\u{fffd} end");
    }

    #[test]
    fn process_pool_caps_all_tails_together_and_is_released_on_drop() {
        let pool = StderrBudget::new(10);
        let a = StderrTail::with_pool(limits(2, 6), pool.clone());
        let b = StderrTail::with_pool(limits(2, 6), pool.clone());
        a.push(&[b'a'; 100]);
        b.push(&[b'b'; 100]);
        assert_eq!(a.bytes_retained(), 8);
        assert_eq!(b.bytes_retained(), 2);
        assert_eq!(pool.used(), 10);
        assert_eq!(
            b.snapshot().text,
            "bb\n[stderr truncated: kept first 2 and last 0 of 100 bytes]\n"
        );
        drop(a);
        assert_eq!(pool.used(), 2);
        // b can now grow its tail.
        b.push(b"0123456789");
        assert_eq!(b.bytes_retained(), 8);
        assert_eq!(pool.used(), 8);
    }

    #[test]
    fn excerpt_fits_its_budget_and_keeps_the_newest_bytes() {
        let mut l = limits(100, 1000);
        l.excerpt_bytes = 120;
        let t = StderrTail::with_pool(l, StderrBudget::new(usize::MAX));
        let body: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
        t.push(&body);
        t.push(b"\nthe real error\n");
        let e = t.excerpt();
        assert!(e.text.len() <= 120, "{}", e.text.len());
        assert!(e.text.ends_with("the real error\n"));
        let m = e.text.lines().find(|l| l.starts_with("[stderr")).unwrap();
        // The marker counts what the excerpt shows.
        let shown_head = e.text.find('\n').unwrap();
        let shown_tail = e.text.len() - e.text.find(m).unwrap() - m.len() - 1;
        assert_eq!(m, marker(shown_head as u64, shown_tail as u64, 5016));
        // Counters are the tail's, not the excerpt's.
        assert_eq!((e.bytes_seen, e.bytes_retained), (5016, 1100));
    }

    #[test]
    fn excerpt_of_an_untruncated_but_long_tail_gets_a_marker() {
        let mut l = limits(0, 1000);
        l.excerpt_bytes = 60;
        let t = StderrTail::with_pool(l, StderrBudget::new(usize::MAX));
        t.push(&[b'x'; 500]);
        let e = t.excerpt();
        assert_eq!(
            e.text,
            // 46 bytes of marker line + 14 bytes of tail = the 60-byte budget.
            format!(
                "[stderr truncated: kept last 14 of 500 bytes]\n{}",
                "x".repeat(14)
            )
        );
        assert!(!e.truncated, "the tail itself kept everything");
    }

    #[tokio::test]
    async fn subscriber_gets_coalesced_lines_then_end() {
        let t = tail(0, 64);
        let mut sub = t.subscribe();
        t.push(b"one\ntw");
        t.push(b"o\nthree\n");
        t.push(b"partial");
        t.finish();
        // Nobody read in between, so all batches coalesced into one event.
        assert_eq!(
            sub.recv().await,
            Some(TailEvent::Lines(vec![
                "one".into(),
                "two".into(),
                "three".into(),
                "partial".into()
            ]))
        );
        assert_eq!(sub.recv().await, Some(TailEvent::End));
        assert_eq!(sub.recv().await, None);
    }

    #[tokio::test]
    async fn slow_subscriber_is_told_exactly_what_it_missed() {
        let t = tail(0, 64);
        let mut sub = t.subscribe();
        // Queue bound 64 bytes: 8 lines of 7 bytes + newline fill it exactly.
        for i in 0..8 {
            t.push(format!("line-{i:02}\n").as_bytes());
        }
        for i in 8..11 {
            t.push(format!("line-{i:02}\n").as_bytes());
        }
        let first = sub.recv().await.unwrap();
        let TailEvent::Lines(l) = first else {
            panic!("{first:?}")
        };
        assert_eq!(l.len(), 8);
        assert_eq!(
            sub.recv().await,
            Some(TailEvent::Missed {
                lines: 3,
                bytes: 24
            })
        );
        // Room again: new lines flow.
        t.push(b"after\n");
        assert_eq!(
            sub.recv().await,
            Some(TailEvent::Lines(vec!["after".into()]))
        );
    }

    #[tokio::test]
    async fn long_line_reaches_subscribers_in_bounded_pieces() {
        let t = tail(0, 64);
        let mut sub = t.subscribe();
        t.push(&[b'z'; 40]);
        let TailEvent::Lines(l) = sub.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(l, vec!["z".repeat(16), "z".repeat(16)]);
        t.push(b"\n");
        let TailEvent::Lines(l) = sub.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(l, vec!["z".repeat(8)]);
        // A line of exactly 16 bytes is one line, not a piece plus an empty line.
        t.push(&[b'y'; 16]);
        t.push(b"\n");
        let TailEvent::Lines(l) = sub.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(l, vec!["y".repeat(16)]);
    }

    #[tokio::test]
    async fn dropped_subscriber_is_forgotten() {
        let t = tail(0, 64);
        let sub = t.subscribe();
        drop(sub);
        t.push(b"x\n");
        assert!(t.lock().subscribers.is_empty());
    }

    #[tokio::test]
    async fn drain_reads_to_eof_and_ends_subscribers() {
        let t = tail(2, 4);
        let mut sub = t.subscribe();
        let data: &[u8] = b"abcdef\nghij\n";
        let n = drain(data, &t).await.unwrap();
        assert_eq!(n, 12);
        assert_eq!(
            t.snapshot().text,
            "ab\n[stderr truncated: kept first 2 and last 4 of 12 bytes]\nhij\n"
        );
        assert!(matches!(sub.recv().await, Some(TailEvent::Lines(_))));
        assert_eq!(sub.recv().await, Some(TailEvent::End));
    }

    fn chunked(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        points.sort_unstable();
        let mut out = Vec::new();
        let mut prev = 0;
        for p in points.into_iter().chain([data.len()]) {
            out.push(data[prev..p].to_vec());
            prev = p;
        }
        out
    }

    proptest! {
        #[test]
        fn any_chunking_keeps_the_same_text(
            data in proptest::collection::vec(any::<u8>(), 0..600),
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
            head in 0usize..40,
            cap in 0usize..120,
        ) {
            let whole = tail(head, cap);
            whole.push(&data);
            let pieces = tail(head, cap);
            let mut sub = pieces.subscribe();
            let mut whole_sub_lines = Vec::new();
            for c in chunked(&data, &cuts) {
                pieces.push(&c);
            }
            pieces.finish();
            prop_assert_eq!(whole.snapshot(), pieces.snapshot());
            // Against a model: the head is the first bytes, the ring the newest.
            let h = head.min(data.len());
            let t = cap.min(data.len() - h);
            prop_assert_eq!(&pieces.lock().head[..], &data[..h]);
            prop_assert_eq!(pieces.lock().ring_bytes(), data[data.len() - t..].to_vec());
            prop_assert_eq!(whole.excerpt(), pieces.excerpt());
            let s = pieces.snapshot();
            prop_assert!(s.bytes_retained <= (head + cap) as u64);
            prop_assert_eq!(s.bytes_seen, data.len() as u64);
            prop_assert_eq!(s.truncated, data.len() > head + cap);
            prop_assert!(pieces.excerpt().text.len() <= 256);
            while let Some(ev) = sub.try_recv() {
                if let TailEvent::Lines(l) = ev { whole_sub_lines.extend(l) }
            }
            prop_assert!(whole_sub_lines.iter().all(|l| l.len() <= 16 * 3));
        }

        #[test]
        fn shared_pool_is_never_exceeded(
            pushes in proptest::collection::vec((0usize..4, proptest::collection::vec(any::<u8>(), 0..200)), 0..40),
            limit in 0usize..300,
        ) {
            let pool = StderrBudget::new(limit);
            let tails: Vec<_> = (0..4).map(|_| StderrTail::with_pool(limits(10, 50), pool.clone())).collect();
            for (i, bytes) in pushes {
                tails[i].push(&bytes);
                let kept: u64 = tails.iter().map(|t| t.bytes_retained()).sum();
                prop_assert!(kept <= limit as u64);
                prop_assert!(pool.used() <= limit);
            }
            drop(tails);
            prop_assert_eq!(pool.used(), 0);
        }

        #[test]
        fn excerpt_never_exceeds_its_budget(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            budget in 0usize..300,
        ) {
            let mut l = limits(64, 1024);
            l.excerpt_bytes = budget;
            let t = StderrTail::with_pool(l, StderrBudget::new(usize::MAX));
            t.push(&data);
            prop_assert!(t.excerpt().text.len() <= budget);
        }
    }
}
