//! The desktop's supervised `gatehouse serve` (core's `supervise`), driven
//! with the real CLI binary: started on a site, called over real HTTP, its
//! counters read back from the metrics endpoint, then stopped with nothing
//! left listening or running; and the lifeline that keeps it from outliving
//! the app.

#[cfg(unix)]
use std::io::Write as _;
#[cfg(unix)]
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gatehouse_core::error::codes;
use gatehouse_core::supervise::{ServeSettings, ServeSlot, ServeSpec};
#[cfg(unix)]
use serde_json::json;

#[cfg(unix)]
use crate::serve_util::try_legacy_with;
use crate::util::{BIN, TestSite};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[cfg(unix)]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spec(site: &TestSite, port: u16, hosts: &[&str]) -> ServeSpec {
    with(
        site,
        ServeSettings {
            listen: format!("127.0.0.1:{port}"),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            origins: vec!["https://app.example.org".to_string()],
            ..ServeSettings::default()
        },
    )
}

fn with(site: &TestSite, settings: ServeSettings) -> ServeSpec {
    let mut spec = ServeSpec::new(
        std::path::Path::new(BIN).canonicalize().unwrap(),
        site.dir.clone(),
        &settings,
    )
    .unwrap();
    // The test's own signing key and scratch, as every CLI run here gets.
    spec.env.retain(|(k, _)| !k.starts_with("GATEHOUSE_"));
    spec.env
        .push(("GATEHOUSE_CONFIG_DIR".into(), site.config_dir().into()));
    spec.env
        .push(("GATEHOUSE_SCRATCH_DIR".into(), site.scratch_dir().into()));
    spec
}

#[cfg(unix)]
fn list_tools(addr: &str, key: Option<&str>, host: Option<&str>) -> u16 {
    let host: Vec<(&str, &str)> = host.map(|h| ("Host", h)).into_iter().collect();
    try_legacy_with(addr, key, &host, 1, "tools/list", json!({}))
        .unwrap_or_else(|| panic!("no answer from {addr}"))
        .status
}

#[cfg(unix)]
fn alive(pid: u32) -> bool {
    // Reaped by the supervisor: no zombie stays under this PID.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

#[cfg(unix)]
#[test]
fn supervised_serve_counts_calls_and_limited_keys_then_stops_leaving_nothing() {
    let site = TestSite::new("supervise");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(site.dir.join("gatehouse.toml"))
        .unwrap();
    // A burst of 2, then 1 per second: the fifth quick request is over.
    writeln!(file, "\n[serve]\nrate_per_key = 1").unwrap();
    let (key, key_id) = site.mint("viewer");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let rt = runtime();
    rt.block_on(async {
        let slot = ServeSlot::default();
        let started = slot
            .start(spec(&site, port, &["gatehouse.test"]))
            .await
            .unwrap();
        assert!(started.running);
        assert_eq!(started.url, format!("http://{addr}/mcp"));
        assert!(started.hosts.contains(&"gatehouse.test".to_string()));
        assert!(
            started
                .origins
                .contains(&"https://app.example.org".to_string())
        );
        let pid = started.pid.unwrap();

        // A second start while it runs is refused, and changes nothing.
        let again = slot.start(spec(&site, free_port(), &[])).await.unwrap_err();
        assert_eq!(again.code, codes::SERVE_ALREADY_RUNNING);

        // Real requests: allowed and refused hosts, a wrong key, a burst.
        assert_eq!(list_tools(&addr, None, None), 200);
        assert_eq!(list_tools(&addr, None, Some("gatehouse.test")), 200);
        assert_eq!(list_tools(&addr, None, Some("evil.example")), 403);
        // The last character changed: to `x`, unless it is one (1 key in 64 ends so,
        // and "wrong" was then the key itself).
        let (head, last) = key.split_at(key.len() - 1);
        let wrong = format!("{head}{}", if last == "x" { "y" } else { "x" });
        assert_eq!(list_tools(&addr, Some(&wrong), None), 401);
        let burst: Vec<u16> = (0..5)
            .map(|_| list_tools(&addr, Some(&key), None))
            .collect();
        let limited = burst.iter().filter(|s| **s == 429).count() as u64;
        assert!(limited >= 2, "{burst:?}");

        let status = slot.status().await.unwrap();
        let stats = status.stats.expect("the metrics endpoint answers");
        assert_eq!(stats.auth_failures, 1, "{stats:?}");
        assert_eq!(stats.rate_limited, limited, "{stats:?}");
        assert_eq!(stats.limited_keys.len(), 1, "{stats:?}");
        assert_eq!(stats.limited_keys[0].key_id, key_id);
        assert_eq!(stats.limited_keys[0].requests, limited);
        assert!(stats.requests >= 8, "{stats:?}");
        assert!(stats.errors > limited, "{stats:?}");
        // The kept stderr is the server's own, and holds no key.
        assert!(status.stderr.contains("listening on"), "{}", status.stderr);
        assert!(!status.stderr.contains(&key), "a key reached stderr");

        let stopped = slot.stop().await.unwrap();
        assert!(!stopped.running);
        assert_eq!(stopped.exit.as_deref(), Some("exit status: 0"));
        assert!(TcpStream::connect(&addr).is_err(), "the port is still open");
        assert!(!alive(pid), "serve's process {pid} is still there");
        let err = slot.stop().await.unwrap_err();
        assert_eq!(err.code, codes::SERVE_NOT_RUNNING);
    });
}

/// The panel's public URL and TLS files reach serve's own flags: serve
/// answers over TLS with that certificate, and OAuth's metadata names the
/// public URL as the issuer; the status says OAuth is on and gives the URL
/// under the public one.
#[cfg(unix)]
#[test]
fn supervised_serve_takes_tls_files_and_the_public_url_as_issuer() {
    let site = TestSite::new("supervise-oauth-tls");
    let tmp = tempfile::tempdir().unwrap();
    crate::mcp_serve::self_signed(tmp.path(), "ca");
    let port = free_port();
    let base = format!("https://localhost:{port}");
    let settings = ServeSettings {
        listen: format!("127.0.0.1:{port}"),
        public_url: format!("{base}/"),
        tls_cert: tmp.path().join("cert.pem").display().to_string(),
        tls_key: tmp.path().join("key.pem").display().to_string(),
        ..ServeSettings::default()
    };
    let rt = runtime();
    rt.block_on(async {
        let slot = ServeSlot::default();
        let started = slot.start(with(&site, settings)).await.unwrap();
        assert_eq!(started.url, format!("{base}/mcp"));
        assert_eq!(started.oauth_issuer.as_deref(), Some(base.as_str()));
        assert_eq!(started.settings.public_url, base);
        let out = std::process::Command::new("curl")
            .args(["-s", "--fail", "--cacert"])
            .arg(tmp.path().join("ca.pem"))
            .arg(format!("{base}/.well-known/oauth-authorization-server"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            slot.status().await.unwrap().stderr
        );
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(meta["issuer"], base.as_str(), "{meta}");
        let stopped = slot.stop().await.unwrap();
        assert_eq!(stopped.exit.as_deref(), Some("exit status: 0"));
    });
}

#[test]
fn a_taken_port_fails_the_start_with_serves_own_reason() {
    let site = TestSite::new("supervise-taken");
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let rt = runtime();
    let err = rt
        .block_on(ServeSlot::default().start(spec(&site, port, &[])))
        .unwrap_err();
    assert_eq!(err.code, codes::SERVE_START_FAILED, "{err:?}");
    assert!(err.message.contains("exited before it answered"), "{err:?}");
    assert!(
        err.hint.as_deref().unwrap_or("").contains("cannot listen"),
        "{err:?}"
    );
}

/// The lifeline: a supervisor's end (the kernel closes the pipe however it
/// died) stops serve. Without the flag, a closed stdin means nothing and the
/// server outlives its parent.
#[test]
fn serve_stops_when_its_stdin_closes_only_when_asked() {
    let site = TestSite::new("supervise-stdin");
    let start = |flag: bool| {
        let mut cmd = site.command();
        cmd.env("GATEHOUSE_LOG", "warn")
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if flag {
            cmd.arg("--stop-on-stdin-close");
        }
        cmd.spawn().unwrap()
    };
    let wait = |child: &mut std::process::Child, within: Duration| {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    };

    let mut plain = start(false);
    std::thread::sleep(Duration::from_millis(500));
    drop(plain.stdin.take());
    assert!(
        wait(&mut plain, Duration::from_secs(2)).is_none(),
        "serve without the flag stopped on its own"
    );
    plain.kill().unwrap();
    plain.wait().unwrap();

    let mut tied = start(true);
    std::thread::sleep(Duration::from_millis(500));
    drop(tied.stdin.take());
    let status = wait(&mut tied, Duration::from_secs(15)).expect("serve outlived its stdin");
    assert!(status.success(), "{status}");
}
