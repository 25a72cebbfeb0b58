//! Turning kept bytes into text: the truncation marker, fitting a budget,
//! lossy decoding at Gatehouse's own cuts, and redaction of secrets, pieces
//! left at a cut included.

/// The shortest piece of a secret, left at a cut, that is redacted (see the
/// module's "Secrets").
pub const MIN_PARTIAL_SECRET: usize = 4;

use std::ops::Range;

use crate::redact::{REDACTED, Secrets};

/// The marker text for `head` and `tail` raw byte counts out of `seen`.
pub fn marker(head: u64, tail: u64, seen: u64) -> String {
    if head == 0 {
        format!("[stderr truncated: kept last {tail} of {seen} bytes]")
    } else {
        format!("[stderr truncated: kept first {head} and last {tail} of {seen} bytes]")
    }
}

/// What rendering needs to redact at the cuts it makes.
pub(super) struct Cuts<'a> {
    pub(super) secrets: &'a Secrets,
    /// The kept bytes end where the child is still writing.
    pub(super) open_end: bool,
}

/// Renders head + marker + tail within `max_text` bytes, shrinking the shown
/// head and tail (the marker then counts what is shown, so it stays exact).
/// The tail gets the room first (it usually holds the error), the head at most a
/// quarter of the budget unless the tail leaves more. Also returns where the
/// marker sits in the text, when it is there whole.
pub(super) fn render_truncated(
    head: &[u8],
    tail: &[u8],
    seen: u64,
    max_text: usize,
    cuts: &Cuts,
) -> (String, Option<Range<usize>>) {
    let fits = |h: usize, t: usize| {
        render_parts(&head[..h], &tail[tail.len() - t..], seen, cuts)
            .0
            .len()
            <= max_text
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
        let (text, _) = render_parts(&[], &[], seen, cuts);
        let mut end = max_text.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return (text[..end].to_string(), None);
    }
    let mut h = largest(0, head.len().min(max_text / 4), &|h| fits(h, 0));
    let t = largest(0, tail.len(), &|t| fits(h, t));
    if t == tail.len() {
        h = largest(h, head.len(), &|h| fits(h, t));
    }
    let (text, at) = render_parts(&head[..h], &tail[tail.len() - t..], seen, cuts);
    (text, Some(at))
}

fn render_parts(head: &[u8], tail: &[u8], seen: u64, cuts: &Cuts) -> (String, Range<usize>) {
    // Bytes are missing between head and tail: both sides of the gap are cuts.
    let head_text = redact_at_cuts(cuts.secrets, decode_trim_end(head), false, true);
    let tail_text = redact_at_cuts(cuts.secrets, decode_trim_start(tail), true, cuts.open_end);
    let marker = marker(head.len() as u64, tail.len() as u64, seen);
    let mut out = String::with_capacity(head_text.len() + marker.len() + tail_text.len() + 2);
    out.push_str(&head_text);
    if !head_text.is_empty() && !head_text.ends_with('\n') {
        out.push('\n');
    }
    let at = out.len()..out.len() + marker.len();
    out.push_str(&marker);
    out.push('\n');
    out.push_str(&tail_text);
    (out, at)
}

/// Replaces every whole secret, then the piece of one left at a cut: the end of
/// a secret at the start of `text` (`cut_start`), the start of one at its end
/// (`cut_end`).
pub(super) fn redact_at_cuts(
    secrets: &Secrets,
    text: String,
    cut_start: bool,
    cut_end: bool,
) -> String {
    let mut text = crate::redact::redact_credentials(&secrets.redact(text));
    let secrets = secrets.forms();
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
pub(super) fn secret_safe_cut(bytes: &[u8], secrets: &Secrets) -> usize {
    let cut = utf8_safe_cut(bytes);
    let kept = &bytes[..cut];
    let held_back = longest_piece(secrets.forms(), 1, |s, n| {
        kept.ends_with(&s.as_bytes()[..n])
    })
    .unwrap_or(0);
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
