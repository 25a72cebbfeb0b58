//! The per-connection isolation profile through the binary: `connections add`
//! flags, their validation, `connections show` and `probe`; and the ANSI and
//! marker forger against `gatehouse tail` and the stored stderr excerpt.

use crate::util::{TestSite, add_hostile, fixture, installed};

#[test]
fn profile_flags_are_stored_and_shown() {
    let site = TestSite::new("profile_flags");
    let data = site.path().parent().unwrap().join("data");
    let out = site.path().parent().unwrap().join("out");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let (data_s, out_s) = (data.to_string_lossy(), out.to_string_lossy());
    site.ok(&[
        "connections",
        "add",
        "wide",
        "--sandbox",
        "landlock",
        "--allow-read",
        &data_s,
        "--allow-write",
        &out_s,
        "--network",
        "--scratch-quota",
        "64MiB",
        "--max-processes",
        "32",
        "--max-open-files",
        "256",
        "--nice",
        "15",
        "--allow-unix-sockets",
        "--",
        "python3",
        &fixture("hostile.py"),
    ]);
    let show = site.ok_json(&["connections", "show", "wide", "--json"]);
    let p = &show["limits"]["sandbox"];
    assert_eq!(p["backend"], "landlock", "{show}");
    assert_eq!(p["read_only"][0], data_s.as_ref());
    assert_eq!(p["read_write"][0], out_s.as_ref());
    assert_eq!(p["network"], true);
    assert_eq!(p["scratch_quota_bytes"], 64 << 20);
    assert_eq!(p["max_processes"], 32);
    assert_eq!(p["max_open_files"], 256);
    assert_eq!(p["nice"], 15);
    assert_eq!(p["unix_sockets"], true);
    assert!(show["pin"].is_null(), "not connected yet: {show}");
    let text = site.ok(&["connections", "show", "wide"]);
    for needle in [
        "sandbox: landlock",
        &format!("read-only paths: {data_s}"),
        &format!("read-write paths: {out_s}"),
        "network: allowed",
        "scratch quota: 64 MiB",
        "max processes: 32",
        "max open files: 256",
        "nice: 15",
        "UNIX sockets: allowed",
        "not pinned yet",
        // Every layer, applied or not; the ceilings the site's defaults.
        "    Landlock fs: applied (ABI",
        "    network: not applied: the profile allows the network (--network)",
        "    UNIX sockets: not applied: the profile allows them (--allow-unix-sockets)",
        "    memory ceiling: applied (1 GiB (site default), resident memory of the group watched; RLIMIT_DATA 1 GiB)",
        "    CPU budget: applied (10 min (site default), CPU time of the group watched)",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }
    let probe = site.ok_json(&["probe", "wide", "--json"]);
    assert_eq!(probe["isolation"]["backend"], "landlock");
    assert_eq!(probe["isolation"]["network"], true);
    assert_eq!(probe["isolation"]["scratch_quota_bytes"], 64 << 20);
    assert_eq!(probe["isolation"]["nice"], 15);
    assert_eq!(probe["isolation"]["unix_sockets"], true);
    assert_eq!(probe["isolation"]["read_only_view"], true);
    let text = site.ok(&["probe", "wide"]);
    assert!(text.contains("sandbox: landlock (Landlock ABI"), "{text}");
    assert!(text.contains(", read-only view)"), "{text}");
    assert!(text.contains("network allowed"), "{text}");
    assert!(text.contains("tools pinned: 35 tools"), "{text}");
    // The running connection's layers: what the spawn applied.
    for needle in [
        "    Landlock fs: applied (ABI",
        "    read-only view: applied",
        "    open files: applied (256 per process)",
        "    priority: applied (nice 15)",
        "    memory ceiling: applied (1 GiB (site default)",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }
    let list = site.ok(&["connections", "list"]);
    assert!(list.contains("wide  landlock"), "{list}");
}

#[test]
fn bad_profile_flags_are_refused_with_the_reason() {
    let site = TestSite::new("profile_invalid");
    let server = fixture("hostile.py");
    let existing = site.path().to_string_lossy().into_owned();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["--sandbox", "docker"],
            "SANDBOX_PROFILE_INVALID",
            "not a sandbox backend",
        ),
        (
            &["--allow-read", "relative/dir"],
            "SANDBOX_PROFILE_INVALID",
            "not an absolute path",
        ),
        (
            &["--allow-write", "/nonexistent/gatehouse/x"],
            "SANDBOX_PROFILE_INVALID",
            "does not exist",
        ),
        (
            &["--allow-read", "/"],
            "SANDBOX_PROFILE_INVALID",
            "whole file system",
        ),
        (
            &["--sandbox", "none", "--allow-read", &existing],
            "SANDBOX_PROFILE_INVALID",
            "no effect",
        ),
        (
            &["--scratch-quota", "lots"],
            "INPUT_INVALID",
            "is not a size",
        ),
        (
            &["--scratch-quota", "10KiB"],
            "SANDBOX_PROFILE_INVALID",
            "below 1 MiB",
        ),
        (
            &["--max-processes", "0"],
            "SANDBOX_PROFILE_INVALID",
            "at least 1",
        ),
        (
            &["--max-open-files", "4"],
            "SANDBOX_PROFILE_INVALID",
            "too low",
        ),
        (
            &["--max-open-files", "999999999999"],
            "SANDBOX_PROFILE_INVALID",
            "hard limit",
        ),
        (&["--nice", "20"], "SANDBOX_PROFILE_INVALID", "out of range"),
        (
            &["--sandbox", "bwrap", "--allow-unix-sockets"],
            "SANDBOX_PROFILE_INVALID",
            "needs the landlock backend",
        ),
    ];
    for (flags, code, text) in cases {
        let mut args = vec!["connections", "add", "bad"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "python3", &server]);
        let f = site.fails(&args);
        assert_eq!(&f.code, code, "{flags:?}: {}", f.stderr);
        assert!(f.stderr.contains(text), "{flags:?}: {}", f.stderr);
        assert!(f.stderr.contains("hint:"), "{flags:?}: {}", f.stderr);
    }
    assert_eq!(
        site.ok_json(&["connections", "list", "--json"]),
        serde_json::json!([])
    );
}

#[test]
fn bwrap_backend_is_chosen_per_connection() {
    if !installed(&["bwrap"]) {
        return;
    }
    let site = TestSite::new("profile_bwrap");
    site.ok(&[
        "connections",
        "add",
        "boxed",
        "--sandbox",
        "bwrap",
        "--",
        "python3",
        &fixture("hostile.py"),
    ]);
    let probe = site.ok_json(&["probe", "boxed", "--json"]);
    assert_eq!(probe["isolation"]["backend"], "bwrap", "{probe}");
    assert_eq!(probe["isolation"]["network"], false);
    let call = site.ok_json(&[
        "call",
        "boxed",
        "read_file",
        "--args",
        &serde_json::json!({"path": site.path().join("gatehouse.toml")}).to_string(),
        "--json",
    ]);
    let out: serde_json::Value =
        serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        out["ok"], false,
        "bwrap child read the site settings: {out}"
    );
    // No capabilities inside, whoever runs the host: bwrap started by root
    // had kept them all, and the child remounted /etc read-write and wrote
    // into the host's own.
    let call = site.ok_json(&[
        "call",
        "boxed",
        "remount",
        "--args",
        r#"{"path": "/etc"}"#,
        "--json",
    ]);
    let out: serde_json::Value =
        serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(out["cap_eff"], "0000000000000000", "{out}");
    assert_eq!(out["ok"], false, "bwrap child remounted /etc: {out}");
}

/// Lines of `text` that start like Gatehouse's own.
fn own_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("[gatehouse") || l.starts_with("[stderr truncated")
        })
        .collect()
}

#[test]
fn child_cannot_forge_gatehouse_lines_or_drive_the_terminal_in_tail() {
    let site = TestSite::new("forger_tail");
    site.ok(&[
        "connections",
        "add",
        "forger",
        "--",
        "python3",
        &fixture("hostile.py"),
        "--forge-then-exit",
    ]);
    let out = site.ok(&["tail", "forger"]);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}'),
        "raw terminal escapes reached the terminal: {out:?}"
    );
    assert!(out.contains("\\u001b]52;c;"), "the escape is shown: {out}");
    let own = own_lines(&out);
    assert_eq!(
        own.len(),
        1,
        "only Gatehouse's own closing line: {own:?}\n{out}"
    );
    assert!(own[0].starts_with("[gatehouse: connection ended"), "{out}");
    assert!(
        out.contains("\\u005bgatehouse: connection ended (closed)"),
        "{out}"
    );
    assert!(
        out.contains("\\u005bstderr truncated: kept last 10"),
        "{out}"
    );
}

#[test]
fn child_cannot_forge_the_truncation_marker_in_the_stderr_excerpt() {
    let site = TestSite::new("forger_excerpt");
    site.ok(&[
        "connections",
        "add",
        "forger",
        "--",
        "python3",
        &fixture("hostile.py"),
        "--forge",
    ]);
    let probe = site.ok_json(&["probe", "forger", "--json"]);
    let tail = probe["stderr"]["tail"].as_str().unwrap();
    assert_eq!(probe["stderr"]["truncated"], false);
    assert!(
        own_lines(tail).is_empty(),
        "forged lines kept as is: {tail}"
    );
    assert!(tail.contains("\\u005bstderr truncated"), "{tail}");
}

/// `gatehouse` marks itself non-dumpable first thing: even a child with no
/// Landlock (`--sandbox none`) cannot read its environment through /proc.
#[test]
fn host_environment_is_unreadable_even_without_landlock() {
    let site = TestSite::new("environ_none");
    site.ok(&[
        "connections",
        "add",
        "envy",
        "--sandbox",
        "none",
        "--",
        "python3",
        &fixture("hostile.py"),
    ]);
    let call = site.ok_json(&["call", "envy", "environ", "--json"]);
    let out: serde_json::Value =
        serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(out["ok"], false, "the host's environment was read: {out}");
    let tail = call["stderr"]["tail"].as_str().unwrap();
    assert!(!tail.contains("GATEHOUSE_CONFIG_DIR"), "{tail}");
}

/// Live (not zombie) processes whose command line names `needle`.
fn running_with(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rfind(')').and_then(|i| stat[i + 2..].chars().next());
            !matches!(state, None | Some('Z') | Some('X'))
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// Found by an attack run: a process that forks and exits every millisecond
/// after `setsid` outran teardown's `/proc` scans (no PID lived long enough
/// to be killed) and carried on under init once `gatehouse call` exited.
#[test]
fn pid_hopping_daemon_does_not_outlive_gatehouse_call() {
    let site = TestSite::new("hopper");
    // A copy of its own, so its processes can be told from other tests'.
    let script = site.path().parent().unwrap().join("hopper-hostile.py");
    std::fs::copy(fixture("hostile.py"), &script).unwrap();
    let needle = script.to_string_lossy().into_owned();
    site.ok(&["connections", "add", "hop", "--", "python3", &needle]);
    let call = site.ok_json(&[
        "call",
        "hop",
        "hopper",
        "--json",
        "--args",
        r#"{"seconds": 8}"#,
    ]);
    assert_eq!(call["state"], "completed", "{call}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let survivors = running_with(&needle);
    // Whatever the assertion says, stop them (they end by themselves too).
    for _ in 0..500 {
        let left = running_with(&needle);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
    assert!(
        survivors.is_empty(),
        "hopping processes outlived teardown: {survivors:?}"
    );
}

/// The old layout put scratch at `<site>/run/scratch`, where `../../..` is the
/// site: a scratch root inside the site (here pointed there on purpose) is
/// refused before any server starts, and nothing is created there.
#[test]
fn scratch_root_inside_the_site_is_refused() {
    let site = TestSite::new("scratch_in_site");
    add_hostile(&site, "h");
    let inside = site.path().join("run/scratch");
    let args = ["call", "h", "fds"];
    let out = site
        .command()
        .env("GATEHOUSE_SCRATCH_DIR", &inside)
        .args(args)
        .output()
        .unwrap();
    let f = crate::util::failure(out, &args);
    assert_eq!(f.code, "SCRATCH_UNSAFE", "{}", f.stderr);
    assert!(f.stderr.contains("inside the site"), "{}", f.stderr);
    assert!(!inside.exists(), "scratch created in the site");
}

/// `cmd` as on a kernel built without Landlock: a seccomp filter in front of
/// it answers Landlock's three calls `ENOSYS`, as such a kernel does (this
/// one offers ABI 7, so the path is otherwise never taken).
#[allow(unsafe_code)]
fn without_landlock(mut cmd: std::process::Command) -> std::process::Command {
    use nix::libc;
    use seccompiler::{SeccompAction, SeccompFilter};
    use std::os::unix::process::CommandExt;
    let calls = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
    ];
    let filter: seccompiler::BpfProgram = SeccompFilter::new(
        calls.into_iter().map(|nr| (nr, Vec::new())).collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH.try_into().unwrap(),
    )
    .unwrap()
    .try_into()
    .unwrap();
    // SAFETY: between fork and exec only prctl and seccomp run (apply_filter
    // makes both calls and allocates nothing).
    unsafe {
        cmd.pre_exec(move || seccompiler::apply_filter(&filter).map_err(std::io::Error::other));
    }
    cmd
}

/// Without Landlock the server still runs, says so in `probe` and in the
/// call's isolation (reads and TCP are open, as the status then says), and
/// every other layer holds: the read-only view keeps it from writing the site
/// database, no_new_privs and the descriptor ceiling are set, and the host's
/// environment stays unreadable.
#[test]
fn without_landlock_the_server_runs_with_the_other_layers_and_says_so() {
    let site = TestSite::new("no_landlock");
    add_hostile(&site, "h");
    let run = |args: &[&str]| -> serde_json::Value {
        let out = without_landlock(site.command())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let attack = |tool: &str, args: serde_json::Value| -> serde_json::Value {
        let call = run(&["call", "h", tool, "--args", &args.to_string(), "--json"]);
        serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
    };
    let landlock_warning = |isolation: &serde_json::Value| {
        isolation["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("Landlock is not available"))
    };

    let probe = run(&["probe", "h", "--json"]);
    assert_eq!(probe["isolation"]["landlock_abi"], 0, "{probe}");
    assert!(landlock_warning(&probe["isolation"]), "{probe}");
    // Nothing rules TCP now, and the status says so.
    assert_eq!(probe["isolation"]["network"], true, "{probe}");
    // The same probe without the filter: the kernel's Landlock, no warning.
    let real = site.ok_json(&["probe", "h", "--json"]);
    assert_ne!(real["isolation"]["landlock_abi"], 0, "{real}");
    assert!(!landlock_warning(&real["isolation"]), "{real}");
    // Per layer: Landlock's are not applied and say why; the others held.
    let layer = |iso: &serde_json::Value, name: &str| -> serde_json::Value {
        iso["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["layer"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing in {iso}"))
    };
    let fs = layer(&probe["isolation"], "landlock_fs");
    assert_eq!(fs["applied"], false, "{fs}");
    assert_eq!(fs["detail"], "Landlock is not available on this kernel");
    let net = layer(&probe["isolation"], "network");
    assert_eq!(net["applied"], false, "{net}");
    assert_eq!(net["detail"], "Landlock is not available on this kernel");
    for held in [
        "read_only_view",
        "seccomp",
        "no_new_privs",
        "memory_ceiling",
    ] {
        assert_eq!(
            layer(&probe["isolation"], held)["applied"],
            true,
            "{held}: {probe}"
        );
    }
    assert_eq!(
        layer(&real["isolation"], "landlock_fs")["applied"],
        true,
        "{real}"
    );
    assert_eq!(
        layer(&real["isolation"], "network")["applied"],
        true,
        "{real}"
    );

    // Files are not confined (what the warning says) ...
    let settings = site.path().join("gatehouse.toml");
    let read = attack("read_file", serde_json::json!({"path": settings}));
    assert_eq!(read["ok"], true, "{read}");
    // ... but the read-only view still refuses every write outside scratch.
    let planted = site.path().join("planted.txt");
    let write = attack("write_file", serde_json::json!({"path": planted}));
    assert_eq!(write["ok"], false, "{write}");
    assert!(!planted.exists());
    if let Some(db) = site.db_file() {
        let tamper = attack(
            "db_tamper",
            serde_json::json!({"path": db, "email": "viewer@example.com"}),
        );
        assert_eq!(tamper["ok"], false, "{tamper}");
        let whoami = site.ok_json(&["whoami", "--email", "viewer@example.com", "--json"]);
        assert!(!whoami.to_string().contains("admin"), "{whoami}");
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tcp = attack(
        "connect",
        serde_json::json!({"host": "127.0.0.1", "port": port}),
    );
    assert_eq!(tcp["ok"], true, "{tcp}");
    let limits = attack("limits", serde_json::json!({"open": 2000}));
    assert_eq!(limits["no_new_privs"], 1, "{limits}");
    assert!(limits["opened"].as_u64().unwrap() < 1024, "{limits}");
    assert_eq!(attack("environ", serde_json::json!({}))["ok"], false);
}

/// `call` ended by a signal (Ctrl-C, a closed terminal, `timeout`) stops the
/// server it started and everything under it: the host had died at once,
/// and the server went on under init with no ceiling.
#[cfg(unix)]
#[test]
fn a_call_ended_by_a_signal_stops_its_server() {
    let site = TestSite::new("interrupted_call");
    let marker = format!("--marker-{}", std::process::id());
    site.ok(&[
        "connections",
        "add",
        "stuck",
        "--",
        "python3",
        &fixture("hostile.py"),
        &marker,
    ]);
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let call = site
            .command()
            .args(["call", "stuck", "hang"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while running_with(&marker).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // Past the connect, into the call.
        std::thread::sleep(std::time::Duration::from_millis(500));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(call.id() as i32), signal).unwrap();
        let out = call.wait_with_output().unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("CALL_CANCELLED"), "{signal}: {stderr}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !running_with(&marker).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "{signal}: the server outlived its host: {:?}",
                running_with(&marker)
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
