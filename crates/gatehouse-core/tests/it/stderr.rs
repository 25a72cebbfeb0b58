//! stderr of real processes: invalid UTF-8 and a line bigger than the cap,
//! and many concurrent floods under one process-wide budget.

use std::time::Duration;

use crate::common::*;
use gatehouse_core::sandbox::stderr::{self, StderrBudget, StderrTail, TailLimits};
use gatehouse_core::sandbox::{self, Grace};

const SHORT: Grace = Grace {
    after_stdin_close: Duration::from_millis(300),
    after_term: Duration::from_millis(300),
};

#[tokio::test]
async fn invalid_utf8_and_a_line_bigger_than_the_cap_are_kept_exactly() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let size = 1 << 20;
    let mut child = sandbox::spawn(&python("bad_stderr.py", &[&size.to_string()]), &root)?;
    let tail = StderrTail::with_pool(TailLimits::default(), StderrBudget::new(1 << 20));
    let read = stderr::drain(child.stderr.take().unwrap(), &tail).await?;
    let report = child.teardown(SHORT).await;
    assert_eq!(report.exit.unwrap().code, Some(0));

    let first = b"start \xff\xfe\xc3 invalid\n".len() + "caf\u{e9} ok\n".len();
    let last = "\nlast line \u{20ac}\n".len();
    let total = (first + size + last) as u64;
    assert_eq!(read, total);
    let snap = tail.snapshot();
    assert_eq!(snap.bytes_seen, total);
    assert_eq!(snap.bytes_retained, 2048 + 63488);
    assert!(snap.truncated);
    let x = "x".repeat(2048 - first);
    let expected_head = format!("start \u{fffd}\u{fffd}\u{fffd} invalid\ncaf\u{e9} ok\n{x}\n");
    let marker = format!("[stderr truncated: kept first 2048 and last 63488 of {total} bytes]\n");
    let tail_x = "x".repeat(63488 - last);
    assert_eq!(
        snap.text,
        format!("{expected_head}{marker}{tail_x}\nlast line \u{20ac}\n")
    );
    // The excerpt keeps the newest bytes within its own budget, marker exact.
    let ex = tail.excerpt();
    assert!(ex.text.len() <= 4096);
    assert!(ex.text.ends_with("\nlast line \u{20ac}\n"));
    Ok(())
}

#[tokio::test]
async fn concurrent_floods_never_exceed_the_process_wide_budget() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let pool = StderrBudget::new(256 * 1024);
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let mut child = sandbox::spawn(&python("flood.py", &["20"]), &root)?;
        let tail = StderrTail::with_pool(TailLimits::default(), pool.clone());
        let stderr = child.stderr.take().unwrap();
        tasks.push(tokio::spawn(async move {
            let read = stderr::drain(stderr, &tail).await.unwrap();
            let report = child.teardown(SHORT).await;
            (read, tail, report)
        }));
    }
    let mut tails = Vec::new();
    for t in tasks {
        let (read, tail, report) = t.await?;
        assert_eq!(read, 20 << 20);
        assert_eq!(report.exit.unwrap().code, Some(0));
        assert!(pool.used() <= pool.limit());
        tails.push(tail);
    }
    let kept: u64 = tails.iter().map(|t| t.bytes_retained()).sum();
    assert!(kept <= 256 * 1024, "kept {kept}");
    assert_eq!(kept, pool.used() as u64);
    // Every tail still tells the truth about what it saw and dropped.
    for t in &tails {
        let s = t.snapshot();
        assert_eq!(s.bytes_seen, 20 << 20);
        assert!(s.truncated);
        let marker = stderr::marker(s.head_bytes, s.tail_bytes, s.bytes_seen);
        assert!(s.text.contains(&marker));
    }
    drop(tails);
    assert_eq!(pool.used(), 0);
    assert!(scratch_entries(&root).is_empty());
    Ok(())
}
