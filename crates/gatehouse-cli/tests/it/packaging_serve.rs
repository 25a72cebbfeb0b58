//! `packaging/serve`: the systemd unit and the container recipe start
//! `gatehouse serve` in an environment it can work in. Neither a systemd
//! service nor a container is started here; the binary runs with the
//! environment, arguments and home each of them gives it, and must sign its
//! audit checkpoints (the signing key is created in the config directory at
//! the first one, after 100 entries). Without a config directory of its own,
//! a dynamic user (home `/`, read-only under `ProtectSystem=strict`) or a
//! system user whose home was never created answers every call but signs
//! nothing, warning that it could not write an audit checkpoint (after the
//! hundredth call, then at most four times a second).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::serve_util::request;
use crate::util::{BIN, TestSite};

fn packaging(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packaging/serve")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A home no process can create anything in: what a dynamic user's `/`
/// under `ProtectSystem=strict`, or a home directory that was never created
/// under a root-owned `/var/lib`, is to the service.
const UNWRITABLE_HOME: &str = "/proc/gatehouse-home";

/// Runs `gatehouse serve ARGS` with exactly `env` (plus PATH and
/// `GATEHOUSE_SITE`), makes 120 calls, and returns the config directory's
/// signing key if one was written, with the server's stderr.
fn serve_with(site: &TestSite, env: &[(String, String)], args: &[String]) -> (bool, String) {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GATEHOUSE_SITE", &site.dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("gatehouse serve starts");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = channel();
    let sink = log.clone();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("gatehouse serve: listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_string());
            }
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("gatehouse serve did not start: {}", log.lock().unwrap())
        });
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "content_read", "arguments": {"slug": "welcome"}}}))
    .unwrap();
    for _ in 0..120 {
        let r = request(
            &addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            &body,
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let config = env
        .iter()
        .find(|(k, _)| k == "GATEHOUSE_CONFIG_DIR")
        .map(|(_, v)| PathBuf::from(v));
    // The checkpoint is written after the answer, aside: give it time.
    let deadline = Instant::now() + Duration::from_secs(20);
    let signed = loop {
        let signed = config
            .as_ref()
            .is_some_and(|c| c.join("audit-signing-key").is_file());
        if signed || Instant::now() > deadline || log.lock().unwrap().contains(UNSIGNED) {
            break signed;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    let log = log.lock().unwrap().clone();
    (signed, log)
}

/// The unit's `Environment=` settings, `/var/lib/gatehouse` (its
/// What `serve` logs each time it cannot sign an audit checkpoint.
const UNSIGNED: &str = "could not write an audit checkpoint";

/// `StateDirectory=gatehouse`) moved to `state`, and a dynamic user's home.
fn unit_environment(unit: &str, state: &Path) -> Vec<(String, String)> {
    assert!(
        unit.lines().any(|l| l.trim() == "StateDirectory=gatehouse"),
        "the unit keeps its state in /var/lib/gatehouse"
    );
    let mut env: Vec<(String, String)> = unit
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Environment="))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            (
                k.to_string(),
                v.replace("/var/lib/gatehouse", &state.display().to_string()),
            )
        })
        .collect();
    env.push(("HOME".into(), UNWRITABLE_HOME.into()));
    env
}

/// The unit's `ExecStart=` arguments, with its addresses made free ports.
fn unit_arguments(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.trim().strip_prefix("ExecStart="))
        .expect("the unit has ExecStart");
    let mut words: Vec<String> = line.split_whitespace().map(String::from).collect();
    assert_eq!(words.remove(0), "/usr/bin/gatehouse");
    for i in 1..words.len() {
        if matches!(words[i - 1].as_str(), "--listen" | "--metrics-listen") {
            words[i] = "127.0.0.1:0".into();
        }
    }
    words
}

#[test]
fn the_systemd_unit_gives_serve_a_config_directory_it_can_sign_checkpoints_in() {
    let site = TestSite::new("unit");
    let state = tempfile::tempdir().unwrap();
    let unit = packaging("gatehouse-serve.service");
    let (signed, log) = serve_with(
        &site,
        &unit_environment(&unit, state.path()),
        &unit_arguments(&unit),
    );
    assert!(
        signed,
        "no signing key under the unit's state directory: {log}"
    );
    assert!(!log.contains(UNSIGNED), "{log}");
    // The control: the same start without the unit's Environment= lines signs nothing.
    let (signed, log) = serve_with(
        &site,
        &[("HOME".into(), UNWRITABLE_HOME.into())],
        &unit_arguments(&unit),
    );
    assert!(!signed);
    assert!(log.contains(UNSIGNED), "{log}");
    assert!(log.contains("SECRET_STORE_UNAVAILABLE"), "{log}");
}

/// `systemd-analyze verify` (where installed) finds nothing to say about the
/// unit: no unknown key, no bad value.
#[test]
fn the_systemd_unit_verifies() {
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    };
    assert!(probe.status.success());
    let dir = tempfile::tempdir().unwrap();
    let unit = dir.path().join("gatehouse-serve.service");
    // verify checks that ExecStart's program exists and runs.
    std::fs::write(
        &unit,
        packaging("gatehouse-serve.service").replace("/usr/bin/gatehouse", BIN),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.trim().is_empty(), "systemd-analyze verify: {said}");
}

/// The container's user: its home exists (`--create-home`) and the config
/// directory is named inside it (`ENV`), on the declared volume.
#[test]
fn the_container_recipe_gives_serve_a_config_directory_it_can_sign_checkpoints_in() {
    let recipe = packaging("Containerfile");
    let useradd = recipe
        .lines()
        .find(|l| l.contains("useradd"))
        .expect("the recipe creates a user");
    let home = useradd
        .split_whitespace()
        .skip_while(|w| *w != "--home-dir")
        .nth(1)
        .expect("the user's home is named");
    assert_eq!(home, "/var/lib/gatehouse");
    assert!(
        recipe.lines().any(|l| l.trim() == format!("VOLUME {home}")),
        "the home is a volume, so the signing key outlives the container"
    );
    let root = tempfile::tempdir().unwrap();
    let created = root.path().join("home");
    // Without --create-home the home does not exist, and /var/lib is root's.
    let home_here = if useradd.contains("--create-home") {
        std::fs::create_dir(&created).unwrap();
        created.display().to_string()
    } else {
        UNWRITABLE_HOME.to_string()
    };
    let mut env: Vec<(String, String)> = recipe
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ENV "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace(home, &home_here)))
        .collect();
    env.push(("HOME".into(), home_here));
    let args = ["serve", "--listen", "127.0.0.1:0"].map(String::from);
    let (signed, log) = serve_with(&TestSite::new("container"), &env, &args);
    assert!(
        signed,
        "no signing key in the container's config directory: {log}"
    );
    assert!(!log.contains(UNSIGNED), "{log}");
}
