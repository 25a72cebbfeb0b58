//! Live subscribers: bounded per-subscriber queues of coalesced lines that
//! never make the reader wait; a slow subscriber gets a gap notice instead.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

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

#[derive(Debug)]
pub(super) struct SubShared {
    pub(super) queue: Mutex<SubQueue>,
    pub(super) notify: Notify,
    pub(super) cap: usize,
}

#[derive(Debug, Default)]
pub(super) struct SubQueue {
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

    pub(super) fn push_lines(&self, lines: &[String]) {
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

    pub(super) fn push_end(&self) {
        self.lock().end = true;
        self.notify.notify_one();
    }
}

/// A live subscriber's end: [`Subscription::recv`] returns events in stream
/// order, `None` after [`TailEvent::End`].
#[derive(Debug)]
pub struct Subscription {
    pub(super) shared: Arc<SubShared>,
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
