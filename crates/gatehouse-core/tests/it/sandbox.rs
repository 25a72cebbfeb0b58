//! The sandbox against real processes: environment, scratch directory, and
//! group teardown (no orphans, no zombies).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::sandbox::stderr::{self, StderrBudget, StderrTail, TailLimits};
use gatehouse_core::sandbox::{self, EnvValue, Grace, SecretValue};
use tokio::io::AsyncBufReadExt;

const SHORT: Grace = Grace {
    after_stdin_close: Duration::from_millis(300),
    after_term: Duration::from_millis(300),
};

#[tokio::test]
async fn env_dump_holds_only_the_listed_variables() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let host_value = std::env::var("CARGO_MANIFEST_DIR")?;
    let spec = python("env_dump.py", &[])
        .env(
            "PLAIN",
            EnvValue::Plain {
                value: "one two".into(),
            },
        )
        .env(
            "FROM_HOST",
            EnvValue::FromHost {
                name: "CARGO_MANIFEST_DIR".into(),
            },
        )
        .env(
            "API_TOKEN",
            EnvValue::Secret {
                value: SecretValue::new("s3cr3t-value"),
            },
        );
    let mut child = sandbox::spawn(&spec, &root)?;
    let scratch = child.scratch_path().unwrap().to_path_buf();
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.pid))?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await?.expect("a dump line");
    let dump: serde_json::Value = serde_json::from_str(&line)?;
    let env = dump["env"].as_object().unwrap();
    let names: BTreeSet<&str> = env.keys().map(|k| k.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["API_TOKEN", "FROM_HOST", "HOME", "PATH", "PLAIN"])
    );
    assert_eq!(env["PLAIN"], "one two");
    assert_eq!(env["FROM_HOST"], host_value.as_str());
    assert_eq!(env["API_TOKEN"], "s3cr3t-value");
    assert_eq!(env["PATH"], sandbox::DEFAULT_PATH);
    assert_eq!(env["HOME"], scratch.to_str().unwrap());
    assert_eq!(dump["cwd"], scratch.to_str().unwrap());
    assert!(
        !String::from_utf8_lossy(&cmdline).contains("s3cr3t"),
        "secret in argv"
    );
    assert!(!format!("{spec:?}").contains("s3cr3t"), "secret in Debug");

    let report = child.teardown(SHORT).await;
    // It exits by itself when stdin closes: no signal needed.
    assert_eq!(report.exit.unwrap().code, Some(0));
    assert!(!report.sent_term && !report.sent_kill);
    assert!(report.group_gone);
    assert!(!scratch.exists(), "scratch dir removed");
    assert!(scratch_entries(&root).is_empty(), "lock removed too");
    Ok(())
}

#[tokio::test]
async fn grandchild_holding_stderr_dies_with_the_group() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let mut child = sandbox::spawn(
        &sandbox::ChildSpec::new("/bin/sh").arg(fixture("grandchild.sh")),
        &root,
    )?;
    let pgid = child.group.pgid;
    let tail = StderrTail::with_pool(TailLimits::default(), StderrBudget::new(1 << 20));
    let reader = {
        let tail = tail.clone();
        let stderr = child.stderr.take().unwrap();
        tokio::spawn(async move { stderr::drain(stderr, &tail).await })
    };
    // The wrapper exits at once; its grandchild keeps the group (and stderr) alive.
    let exit = child.wait().await?;
    assert_eq!(exit.code, Some(0));
    let live = sandbox::ProcessGroup { pgid }.live_members();
    assert_eq!(
        live.len(),
        1,
        "the grandchild outlived its wrapper: {live:?}"
    );
    assert!(
        !reader.is_finished(),
        "stderr still held open by the grandchild"
    );

    let report = child.teardown(SHORT).await;
    assert!(report.sent_term, "the leftover grandchild was signalled");
    assert!(report.group_gone);
    assert_eq!(
        group_members(pgid),
        Vec::<i32>::new(),
        "no orphan, no zombie"
    );
    let read = reader.await??;
    assert_eq!(read, tail.bytes_seen());
    assert!(
        tail.snapshot()
            .text
            .starts_with("wrapper started grandchild ")
    );
    assert!(scratch_entries(&root).is_empty());
    Ok(())
}

#[tokio::test]
async fn child_ignoring_sigterm_gets_sigkill() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let mut child = sandbox::spawn(&python("hang.py", &["--ignore-term"]), &root)?;
    let pgid = child.group.pgid;
    // Wait until it has installed its handler (it says so on stderr).
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    assert_eq!(
        err.next_line().await?.as_deref(),
        Some("hang: ignoring SIGTERM")
    );
    let report = child.teardown(SHORT).await;
    assert!(report.sent_term && report.sent_kill);
    assert_eq!(report.exit.unwrap().signal, Some(9));
    assert!(report.group_gone);
    assert!(group_members(pgid).is_empty());
    Ok(())
}

#[tokio::test]
async fn dropping_a_child_kills_its_whole_group_and_removes_scratch() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let mut child = sandbox::spawn(
        &sandbox::ChildSpec::new("/bin/sh").arg(fixture("grandchild.sh")),
        &root,
    )?;
    let pgid = child.group.pgid;
    child.wait().await?;
    drop(child);
    // SIGKILL was sent on drop; the re-parented grandchild is ours to reap.
    let group = sandbox::ProcessGroup { pgid };
    for _ in 0..500 {
        group.reap_children();
        if group.members().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(group.members().is_empty());
    assert!(scratch_entries(&root).is_empty());
    Ok(())
}

#[tokio::test]
async fn spawn_failure_is_a_clean_error_and_leaves_no_scratch() -> anyhow::Result<()> {
    let (_tmp, root) = scratch_root();
    let err =
        sandbox::spawn(&sandbox::ChildSpec::new("surely-not-a-command-xyz"), &root).unwrap_err();
    assert_eq!(err.code, "SPAWN_FAILED");
    assert!(scratch_entries(&root).is_empty());
    Ok(())
}
