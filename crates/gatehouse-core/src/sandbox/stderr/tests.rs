//! The stderr tail's tests, through its public API.

use super::*;
use crate::redact::Secrets;
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
    t.set_redactions(Secrets::new(["hunter2".into()]));
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

/// Credentials no connection declared are redacted too, as what they are:
/// a URL's password, a bearer token, a Gatehouse key and a field named as a
/// credential a child logged had been shown in the tail and kept in the
/// run's excerpt.
#[tokio::test]
async fn undeclared_credentials_are_redacted_in_every_text() {
    let t = tail(0, 256);
    let mut sub = t.subscribe();
    t.push(
        b"db redis://:onlypass123@db:6379 auth Authorization: Bearer ghp_abcDEF123456 \
             GET /x?access_token=tok9f8e7d6c GITHUB_TOKEN=ghs_16C7e42F\n",
    );
    for text in [t.snapshot().text, t.excerpt().text] {
        for leaked in [
            "onlypass123",
            "ghp_abcDEF123456",
            "tok9f8e7d6c",
            "ghs_16C7e42F",
        ] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
    }
    let Some(TailEvent::Lines(lines)) = sub.recv().await else {
        panic!("no lines");
    };
    assert!(
        !lines[0].contains("onlypass123") && !lines[0].contains("ghp_"),
        "{lines:?}"
    );
}

#[test]
fn a_secret_cut_by_truncation_is_redacted_on_both_sides_of_the_gap() {
    const SECRET: &str = "s3cr3t-value-42";
    let t = tail(10, 12);
    t.set_redactions(Secrets::new([SECRET.into()]));
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
        t.set_redactions(Secrets::new([SECRET.into()]));
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
    t.set_redactions(Secrets::new(["hunter2hunter2".into()]));
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
    t.set_redactions(Secrets::new([SECRET.into()]));
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

#[test]
fn the_marker_position_is_a_fact_not_a_search() {
    let t = tail(8, 16);
    t.push(b"head\nline one\nline two\n");
    // A look-alike line written by the child stays ordinary text.
    let fake = "[stderr truncated: kept last 1 of 1 bytes]\n";
    t.push(fake.as_bytes());
    t.push(b"end\n");
    let snap = t.snapshot();
    assert!(snap.truncated);
    let (before, m, after) = snap.parts();
    assert_eq!(before, "head\nlin\n");
    assert_eq!(
        m,
        Some(marker(8, 16, snap.bytes_seen).as_str()),
        "{:?}",
        snap.text
    );
    assert_eq!(after, "of 1 bytes]\nend\n");
    let whole = tail(8, 64);
    whole.push(b"one\ntwo\n");
    let snap = whole.snapshot();
    assert_eq!(snap.parts(), ("one\ntwo\n", None, ""));
}
