//! Live subscribers: bounded per-subscriber queues of coalesced lines that
//! never make the reader wait; a slow subscriber gets a gap notice instead.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailEvent {
    /// Complete lines (without their newline), coalesced: one event may carry
    /// many lines. A line longer than [`TailLimits::line_bytes`](super::TailLimits::line_bytes) arrives in pieces.
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

/// Merges runs of `events` and keeps at most `max_lines` lines, the newest:
/// a viewer that takes what is queued a batch per frame gets a bounded number
/// of events and lines whatever the child writes. Lines beyond `max_lines`
/// are the oldest, reported as missed (merged with a gap next to them), so
/// the order of lines and gaps stays true.
pub fn coalesce(events: Vec<TailEvent>, max_lines: usize) -> Vec<TailEvent> {
    let mut out: Vec<TailEvent> = Vec::new();
    for ev in events {
        match (out.last_mut(), ev) {
            (Some(TailEvent::Lines(kept)), TailEvent::Lines(more)) => kept.extend(more),
            (_, TailEvent::Missed { lines, bytes }) => push_missed(&mut out, lines, bytes),
            (_, ev) => out.push(ev),
        }
    }
    let mut total: usize = out
        .iter()
        .map(|e| match e {
            TailEvent::Lines(l) => l.len(),
            _ => 0,
        })
        .sum();
    // Drop the oldest lines first, run by run, until `max_lines` remain.
    let mut bounded: Vec<TailEvent> = Vec::with_capacity(out.len());
    for ev in out {
        let ev = match ev {
            TailEvent::Lines(mut lines) if total > max_lines => {
                let drop = (total - max_lines).min(lines.len());
                total -= drop;
                let bytes = lines[..drop].iter().map(|l| l.len() as u64 + 1).sum();
                lines.drain(..drop);
                push_missed(&mut bounded, drop as u64, bytes);
                if lines.is_empty() {
                    continue;
                }
                TailEvent::Lines(lines)
            }
            TailEvent::Missed { lines, bytes } => {
                push_missed(&mut bounded, lines, bytes);
                continue;
            }
            ev => ev,
        };
        bounded.push(ev);
    }
    bounded
}

/// Appends a gap, merged into the gap just before it if there is one.
fn push_missed(out: &mut Vec<TailEvent>, lines: u64, bytes: u64) {
    match out.last_mut() {
        Some(TailEvent::Missed { lines: l, bytes: b }) => {
            *l += lines;
            *b += bytes;
        }
        _ => out.push(TailEvent::Missed { lines, bytes }),
    }
}

#[cfg(test)]
mod batch_tests {
    use super::{TailEvent, coalesce};

    fn lines(n: usize, tag: &str) -> TailEvent {
        TailEvent::Lines((0..n).map(|i| format!("{tag}{i}")).collect())
    }

    #[test]
    fn runs_of_lines_and_gaps_merge_in_order() {
        let got = coalesce(
            vec![
                lines(2, "a"),
                lines(1, "b"),
                TailEvent::Missed { lines: 3, bytes: 9 },
                TailEvent::Missed { lines: 1, bytes: 2 },
                lines(1, "c"),
                TailEvent::End,
            ],
            100,
        );
        assert_eq!(
            got,
            vec![
                TailEvent::Lines(vec!["a0".into(), "a1".into(), "b0".into()]),
                TailEvent::Missed {
                    lines: 4,
                    bytes: 11
                },
                TailEvent::Lines(vec!["c0".into()]),
                TailEvent::End,
            ]
        );
    }

    #[test]
    fn lines_over_the_bound_are_the_oldest_and_count_as_missed() {
        // 5 + gap + 4 lines, bound 3: the first run goes entirely, one of the
        // second run goes; all of it joins the gap between them.
        let got = coalesce(
            vec![
                lines(5, "a"),
                TailEvent::Missed { lines: 2, bytes: 4 },
                lines(4, "b"),
            ],
            3,
        );
        assert_eq!(
            got,
            vec![
                TailEvent::Missed {
                    lines: 5 + 2 + 1,
                    bytes: 15 + 4 + 3,
                },
                TailEvent::Lines(vec!["b1".into(), "b2".into(), "b3".into()]),
            ]
        );
    }

    #[test]
    fn nothing_queued_is_an_empty_batch() {
        assert!(coalesce(Vec::new(), 10).is_empty());
    }
}
