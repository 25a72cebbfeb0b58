//! Children that outlive `gatehouse call`: a `setsid` daemon escaping the
//! process group, and a server whose host was killed with SIGKILL. Neither may
//! keep running, and a killed run's records and scratch directory are settled
//! by the next start.

use std::time::{Duration, Instant};

use crate::util::{TestSite, add_hostile};

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            state != 'Z' && state != 'X'
        }
        Err(_) => false,
    }
}

fn kill9(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn setsid_daemon_does_not_outlive_gatehouse_call() {
    let site = TestSite::new("orphan_daemon");
    add_hostile(&site, "h");
    let call = site.ok_json(&["call", "h", "daemon", "--json"]);
    let out: serde_json::Value =
        serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let pid = out["pid"].as_i64().unwrap() as i32;
    let survived = alive(pid);
    if survived {
        kill9(pid);
    }
    assert!(!survived, "daemon {pid} outlived gatehouse call");
}

#[test]
fn server_of_a_killed_call_is_killed_and_its_call_closed_by_the_next_start() {
    let site = TestSite::new("orphan_kill9");
    add_hostile(&site, "h");
    let mut cli = site
        .command()
        .args(["call", "h", "hang", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let since = Instant::now();
    while site.sql("SELECT count(*) FROM mcp_calls WHERE state = 'dispatched'") != "1" {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the call never reached dispatched"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid: i32 = site
        .sql("SELECT pid FROM mcp_connection_runs")
        .parse()
        .unwrap();
    // The run's scratch directory: the server works in it.
    let scratch = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    kill9(cli.id() as i32);
    cli.wait().unwrap();
    let orphaned = alive(pid);

    // The next start settles the killed run before anything else.
    site.ok(&["probe", "h", "--json"]);
    let survived = alive(pid);
    if survived {
        kill9(pid);
    }
    assert!(orphaned, "the server should have outlived the SIGKILL");
    assert!(
        !survived,
        "server {pid} of the killed call is still running"
    );
    // Its scratch directory went too, after it (the sweep kills first, then
    // removes; a removal under a live server was the original complaint).
    assert!(!scratch.exists(), "{} was left behind", scratch.display());
    let row = site.sql("SELECT state || '|' || error FROM mcp_calls WHERE tool = 'hang'");
    assert!(row.starts_with("outcome_unknown|"), "{row}");
    assert!(row.contains("killed"), "the record names the reason: {row}");
    let run = site.sql(&format!(
        "SELECT end_reason FROM mcp_connection_runs WHERE pid = {pid}"
    ));
    assert_eq!(run, "host_killed");
    // The closure is audited like every other end of a call.
    let log = site.ok_json(&["audit", "list", "--limit", "1000", "--json"]);
    let ends: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "mcp.client_call" && e["subject"] == "hang")
        .map(|e| {
            let d: serde_json::Value = serde_json::from_str(e["detail"].as_str().unwrap()).unwrap();
            format!(
                "{}/{}",
                d["state"].as_str().unwrap(),
                d["code"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        ends,
        ["dispatched/-", "outcome_unknown/HOST_KILLED"],
        "{log}"
    );
    site.ok(&["audit", "verify"]);
}
