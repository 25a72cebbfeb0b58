//! The properties the fuzz targets check, in one place so that
//! `crates/gatehouse-core/tests/fuzz_replay.rs` replays the committed corpus
//! through exactly the same code on stable Rust, in every test run.
//!
//! Input layout (so the fuzzer steers sizes and chunkings, not only bytes):
//! a few leading bytes set limits, then chunk lengths, then the data.

use gatehouse_core::mcp::wire::framer::{Frame, LineFramer, Oversize};
use gatehouse_core::mcp::wire::jsonrpc;
use gatehouse_core::redact::Secrets;
use gatehouse_core::sandbox::stderr::{
    self, MIN_PARTIAL_SECRET, StderrBudget, StderrTail, TailEvent, TailLimits, TailSnapshot,
};

/// Reads the next byte, 0 when the input is used up.
fn take(input: &mut &[u8]) -> u8 {
    let (first, rest) = input.split_first().unwrap_or((&0, &[]));
    *input = rest;
    *first
}

/// Splits `data` at lengths taken from `cuts` (each 1..=64, cycling).
fn chunk<'a>(data: &'a [u8], cuts: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = if cuts.is_empty() {
            rest.len()
        } else {
            (cuts[i % cuts.len()] as usize % 64 + 1).min(rest.len())
        };
        out.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// The framer gives the same frames and the same failure however the bytes
/// are chunked, under both oversize policies; never holds more than its
/// ceiling; and every line handed on parses (or is rejected) without a panic.
pub fn frame_decoder(mut input: &[u8]) {
    let max = take(&mut input) as usize % 96 + 1;
    let ncuts = take(&mut input) as usize % 8;
    let cuts: Vec<u8> = (0..ncuts).map(|_| take(&mut input)).collect();
    let data = input;

    let run = |chunks: &[&[u8]], policy: Oversize| {
        let mut framer = LineFramer::new(max, policy);
        let mut frames: Vec<Frame<Vec<u8>>> = Vec::new();
        let mut result = Ok(());
        for c in chunks {
            result = framer.push(c, |f| {
                frames.push(match f {
                    Frame::Line(l) => Frame::Line(l.to_vec()),
                    Frame::Oversized { bytes } => Frame::Oversized { bytes },
                })
            });
            assert!(framer.buffered() <= max, "framer holds past its ceiling");
            if result.is_err() {
                break;
            }
        }
        (frames, result)
    };
    // The complete lines of the data, raw (the ceiling counts a `\r`).
    let raw: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .take(data.iter().filter(|&&b| b == b'\n').count())
        .collect();
    let shown = |l: &[u8]| Frame::Line(l.strip_suffix(b"\r").unwrap_or(l).to_vec());

    // Fail: the lines up to the first overlong one, then the error.
    let whole = run(&[data], Oversize::Fail);
    let pieces = run(&chunk(data, &cuts), Oversize::Fail);
    assert_eq!(whole, pieces, "chunking changed the lines");
    for frame in &whole.0 {
        let Frame::Line(line) = frame else {
            panic!("fail never skips");
        };
        assert!(line.len() <= max);
        let _ = jsonrpc::parse_line(line);
    }
    let expected: Vec<_> = raw
        .iter()
        .take_while(|l| l.len() <= max)
        .map(|l| shown(l))
        .collect();
    assert_eq!(whole.0, expected);

    // Skip: every complete line, the overlong ones reported by length.
    let whole = run(&[data], Oversize::Skip);
    let pieces = run(&chunk(data, &cuts), Oversize::Skip);
    assert_eq!(whole, pieces, "chunking changed the frames");
    assert!(whole.1.is_ok(), "skip never fails");
    let expected: Vec<_> = raw
        .iter()
        .map(|l| {
            if l.len() <= max {
                shown(l)
            } else {
                Frame::Oversized { bytes: l.len() }
            }
        })
        .collect();
    assert_eq!(whole.0, expected);
}

/// Arbitrary chunkings of the same bytes keep the same text and counters; kept
/// bytes stay within the per-connection and pool budgets; excerpts within
/// theirs; no whole secret, and no cut piece of one long enough to be
/// recognised, reaches any text; live lines arrive within their piece size.
pub fn stderr_tail(mut input: &[u8]) {
    let limits = TailLimits {
        head_bytes: take(&mut input) as usize % 48,
        tail_bytes: take(&mut input) as usize % 96,
        excerpt_bytes: take(&mut input) as usize % 160,
        line_bytes: take(&mut input) as usize % 40 + 4,
        subscriber_queue_bytes: 1 << 20,
    };
    let pool_limit = take(&mut input) as usize % 160;
    let secret_len = take(&mut input) as usize % 12;
    let secret: Vec<u8> = (0..secret_len)
        .map(|_| take(&mut input) % 4 + b'a')
        .collect();
    let secret = String::from_utf8(secret).expect("ascii");
    let ncuts = take(&mut input) as usize % 8;
    let cuts: Vec<u8> = (0..ncuts).map(|_| take(&mut input)).collect();
    let data = input;

    let feed = |chunks: &[&[u8]]| {
        let pool = StderrBudget::new(pool_limit);
        let tail = StderrTail::with_pool(limits, pool.clone());
        tail.set_redactions(Secrets::new([secret.clone()]));
        let mut sub = tail.subscribe();
        for c in chunks {
            tail.push(c);
            assert!(pool.used() <= pool_limit, "pool exceeded");
            assert!(
                tail.bytes_retained() as usize <= limits.head_bytes + limits.tail_bytes,
                "per-connection budget exceeded"
            );
        }
        let open = tail.snapshot();
        tail.finish();
        let mut live = Vec::new();
        while let Some(ev) = sub.try_recv() {
            if let TailEvent::Lines(lines) = ev {
                live.extend(lines);
            }
        }
        (open, tail.snapshot(), tail.excerpt(), live)
    };
    let whole = feed(&[data]);
    let pieces = feed(&chunk(data, &cuts));
    // Live lines are decoded per piece, so only the kept text must match exactly.
    assert_eq!(whole.1, pieces.1, "chunking changed the kept text");
    assert_eq!(whole.2, pieces.2, "chunking changed the excerpt");
    assert!(
        whole.2.text.len() <= limits.excerpt_bytes,
        "excerpt over budget"
    );
    assert_eq!(whole.1.bytes_seen, data.len() as u64);
    for (open, done, excerpt, live) in [whole, pieces] {
        // A live piece grows past line_bytes only by decoding (an invalid byte
        // becomes 3 bytes of U+FFFD) and redaction.
        for l in &live {
            let redactions = l.matches("<redacted>").count();
            assert!(l.len() <= limits.line_bytes * 3 + redactions * 10, "{l:?}");
        }
        if secret.len() < MIN_PARTIAL_SECRET {
            continue;
        }
        let texts = [&open.text, &done.text, &excerpt.text];
        for text in texts.into_iter().chain(live.iter()) {
            assert!(!text.contains(&secret), "secret in {text:?}");
        }
        for snap in [&open, &done, &excerpt] {
            no_piece_at_cuts(snap, data, &secret, std::ptr::eq(snap, &open));
        }
    }
}

/// No piece of `secret` long enough to recognise sits at a cut: before or
/// after the marker, or at the end of a stream still being written.
fn no_piece_at_cuts(snap: &TailSnapshot, data: &[u8], secret: &str, open_end: bool) {
    let pieces = MIN_PARTIAL_SECRET..secret.len();
    let ends_in_piece = |t: &str| pieces.clone().any(|n| t.ends_with(&secret[..n]));
    let starts_with_piece = |t: &str| {
        pieces
            .clone()
            .any(|n| t.starts_with(&secret[secret.len() - n..]))
    };
    let text = snap.text.as_str();
    let marker = stderr::marker(snap.head_bytes, snap.tail_bytes, snap.bytes_seen);
    if snap.truncated
        && let Some(at) = text.find(&format!("{marker}\n"))
    {
        // The head is the stream's first bytes; its end is a cut unless it
        // ended a line (then the newline before the marker is the child's).
        if !data[..snap.head_bytes as usize].ends_with(b"\n") {
            let before = text[..at].strip_suffix('\n').unwrap_or(&text[..at]);
            assert!(!ends_in_piece(before), "piece before the marker: {text:?}");
        }
        let after = &text[at + marker.len() + 1..];
        assert!(
            !starts_with_piece(after),
            "piece after the marker: {text:?}"
        );
    }
    if open_end {
        assert!(!ends_in_piece(text), "piece at the open end: {text:?}");
    }
}
