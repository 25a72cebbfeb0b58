//! Connection failures are clear errors (which URL, which step, a hint), and a
//! password in the database URL never reaches stderr, logs, the audit log or
//! the database — even with tracing at `trace`.

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_util::{McpSite, tool_error};
use crate::util::{BIN, TestSite, closed_port, failure};
use gatehouse_test_pg::{base_url_or_skip, fresh_database};

/// `gatehouse` with the database URL in the environment (not in argv);
/// `site init` gets the site folder as its argument.
fn gatehouse(site: &std::path::Path, database_url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("--site").arg(site).args(args);
    if args.starts_with(&["site", "init"]) {
        cmd.arg(site);
    }
    cmd.env("GATEHOUSE_DATABASE_URL", database_url)
        .env("GATEHOUSE_LOG", "trace")
        .env_remove("GATEHOUSE_API_KEY")
        .env_remove("GATEHOUSE_SITE")
        .output()
        .expect("gatehouse runs")
}

fn all_output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_closed_port_names_the_url_without_its_password() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let port = closed_port();
    let password = "pw-closed-port-Zq81";
    let url = format!("postgres://gatehouse_pw:{password}@127.0.0.1:{port}/gh_closed");

    let out = gatehouse(&site, &url, &["site", "init"]);
    let text = all_output(&out);
    let f = failure(out, &["site", "init"]);
    assert_eq!(f.code, "DATABASE_UNREACHABLE", "{}", f.stderr);
    assert!(
        f.stderr.contains(&format!(
            "postgres://gatehouse_pw:***@127.0.0.1:{port}/gh_closed"
        )),
        "the error should name the (redacted) URL: {}",
        f.stderr
    );
    assert!(
        f.stderr.to_lowercase().contains("connection refused"),
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("hint: "), "{}", f.stderr);
    assert!(!text.contains(password), "the password leaked: {text}");
    assert!(
        !site.join("gatehouse.toml").exists(),
        "a failed init must not leave a site"
    );

    // An existing site whose database URL (here from the environment) points at
    // the closed port: the same error, and with --json the step is machine-readable.
    let init = Command::new(BIN)
        .args(["site", "init"])
        .arg(&site)
        .env_remove("GATEHOUSE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(init.status.success());
    let out = gatehouse(&site, &url, &["keys", "list", "--json"]);
    let text = all_output(&out);
    let f = failure(out, &["keys", "list", "--json"]);
    let body: serde_json::Value = serde_json::from_str(
        f.stderr
            .lines()
            .find(|l| l.starts_with("{\"error\""))
            .unwrap_or_else(|| panic!("no JSON error: {}", f.stderr)),
    )
    .unwrap();
    assert_eq!(body["error"]["code"], "DATABASE_UNREACHABLE");
    assert_eq!(body["error"]["detail"]["step"], "connect");
    assert_eq!(
        body["error"]["detail"]["url"],
        format!("postgres://gatehouse_pw:***@127.0.0.1:{port}/gh_closed")
    );
    assert!(!text.contains(password), "the password leaked: {text}");
}

/// sqlx reads a password from the URL's query string too (`?password=`): an
/// unreachable database's error had shown it in clear.
#[test]
fn a_password_in_the_urls_query_is_never_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let port = closed_port();
    let password = "pw-in-query-Kx52";
    let url = format!("postgres://gatehouse_pw@127.0.0.1:{port}/gh_closed?password={password}");
    let out = gatehouse(&site, &url, &["site", "init"]);
    let text = all_output(&out);
    let f = failure(out, &["site", "init"]);
    assert_eq!(f.code, "DATABASE_UNREACHABLE", "{}", f.stderr);
    assert!(!text.contains(password), "the password leaked: {text}");
}

#[test]
fn an_unparsable_url_is_refused_without_echoing_its_password() {
    let tmp = tempfile::tempdir().unwrap();
    let password = "pw-bad-url-Hh27";
    let url = format!("postgres://u:{password}@127.0.0.1:notaport/db");
    let out = gatehouse(&tmp.path().join("site"), &url, &["site", "init"]);
    let text = all_output(&out);
    let f = failure(out, &["site", "init"]);
    assert_eq!(f.code, "DATABASE_URL_INVALID", "{}", f.stderr);
    assert!(!text.contains(password), "the password leaked: {text}");
}

/// Sets the password of the `gatehouse_pw` role (created by `scripts/pg.sh`)
/// and gives it a fresh database.
fn password_database(base: &str, password: &str) -> String {
    let db = format!("gh_pw_{}", std::process::id());
    let sql = format!(
        "ALTER ROLE gatehouse_pw LOGIN PASSWORD '{password}'; DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db} OWNER gatehouse_pw;"
    );
    for statement in sql.split_inclusive(';') {
        gatehouse_test_pg::psql(&format!("{base}/postgres"), statement);
    }
    db
}

#[test]
fn a_wrong_password_is_an_authentication_error_and_the_right_one_never_leaks() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    let password = "pw-right-Kd93x";
    let db = password_database(&base, password);
    let host = base.rsplit('@').next().unwrap();
    let wrong = format!("postgres://gatehouse_pw:pw-wrong-Vb22@{host}/{db}");
    let right = format!("postgres://gatehouse_pw:{password}@{host}/{db}");

    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let out = gatehouse(&site, &wrong, &["site", "init"]);
    let text = all_output(&out);
    let f = failure(out, &["site", "init"]);
    assert_eq!(f.code, "DATABASE_AUTH_FAILED", "{}", f.stderr);
    assert!(
        f.stderr
            .contains(&format!("postgres://gatehouse_pw:***@{host}/{db}")),
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("password"), "{}", f.stderr);
    assert!(
        !text.contains("pw-wrong-Vb22"),
        "the password leaked: {text}"
    );

    // With the right password, everything works and the password shows nowhere.
    let mut seen = String::new();
    for args in [
        &["site", "init"][..],
        &[
            "keys", "mint", "--label", "pw test", "--roles", "viewer", "--json",
        ],
        &[
            "users",
            "create",
            "--email",
            "pw@example.com",
            "--roles",
            "editor",
        ],
        &["keys", "list", "--json"],
        &["audit", "list", "--json"],
        &["audit", "verify"],
    ] {
        let out = gatehouse(&site, &right, args);
        assert!(
            out.status.success(),
            "gatehouse {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        seen.push_str(&all_output(&out));
    }
    assert!(
        seen.contains("TRACE") || seen.contains("DEBUG"),
        "tracing was not on"
    );
    assert!(!seen.contains(password), "the password leaked: {seen}");
    let site_file = std::fs::read_to_string(site.join("gatehouse.toml")).unwrap();
    assert!(
        site_file.contains(&format!("postgres://gatehouse_pw@{host}/{db}"))
            && !site_file.contains(password),
        "gatehouse.toml must keep the URL without its password: {site_file}"
    );
    let dump = Command::new("psql")
        .arg(format!("{base}/{db}"))
        .args([
            "-qAt",
            "-c",
            "SELECT a::text FROM audit_log a",
            "-c",
            "SELECT s::text FROM site_config s",
        ])
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("key.mint"), "{dump}");
    assert!(
        !dump.contains(password),
        "the password reached the database"
    );
}

/// A TCP relay to `target` that can stop answering: [`Relay::hang`] cuts the
/// connections it carries and from then on accepts new ones and never
/// answers, as a stuck server or a network cut would; [`Relay::resume`]
/// forwards again.
struct Relay {
    port: u16,
    hung: Arc<AtomicBool>,
    carried: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hung = Arc::new(AtomicBool::new(false));
        let carried = Arc::new(Mutex::new(Vec::new()));
        let (hung2, carried2) = (hung.clone(), carried.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                if hung2.load(Ordering::SeqCst) {
                    held.push(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut carried = carried2.lock().unwrap();
                carried.push(client.try_clone().unwrap());
                carried.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 || std::io::Write::write_all(&mut to, &buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay {
            port,
            hung,
            carried,
        }
    }

    fn hang(&self) {
        self.hung.store(true, Ordering::SeqCst);
        for s in self.carried.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn resume(&self) {
        self.hung.store(false, Ordering::SeqCst);
    }
}

/// With PostgreSQL not answering, a call's work waits out one connect bound
/// (10 s) and its audit entry then gets only a short retry, not a second
/// 10 s: one bound per call (`call_record`). The bound asserted (18 s) is
/// far above the expected 11 s and below the 20 s of waiting twice. The
/// call is refused, not applied, and the chain verifies once the server
/// answers again.
#[test]
fn with_postgresql_not_answering_a_call_waits_one_bound_not_two() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    let direct = fresh_database(&base, "pg_hung").0;
    let (user, rest) = direct.rsplit_once('@').unwrap();
    let (host, db) = rest.split_once('/').unwrap();
    let relay = Relay::start(host.to_string());
    let url = format!("{user}@127.0.0.1:{}/{db}", relay.port);
    let site = TestSite::with_database("pg_hung", true, Some(url));
    let mut mcp = site.mcp(&["--role", "editor"], &[]);
    mcp.initialize("2025-11-25");
    let draft = |slug: &str| json!({"slug": slug, "title": "A title", "body": "a body"});
    let first = mcp.call(1, "content_write_draft", draft("before"), None);
    assert_eq!(first["result"]["isError"], false, "{first}");

    relay.hang();
    let started = Instant::now();
    let stuck = mcp.call(2, "content_write_draft", draft("stuck"), None);
    let waited = started.elapsed();
    let err = tool_error(&stuck);
    assert_eq!(err["code"], "DATABASE_UNREACHABLE", "{stuck}");
    assert!(err["hint"].is_string(), "{stuck}");
    assert!(
        waited < Duration::from_secs(18),
        "the call waited {waited:?}: its work and its entry each waited a full bound"
    );

    relay.resume();
    let after = mcp.call(3, "content_write_draft", draft("after"), None);
    assert_eq!(after["result"]["isError"], false, "{after}");
    assert!(mcp.finish().success());
    assert_eq!(
        site.sql("SELECT count(*) FROM content WHERE slug = 'stuck'"),
        "0"
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}
