//! Test harness: an isolated site driven through the real `gatehouse` binary.
//!
//! The backend is chosen by the environment, so the same tests run on both:
//! by default each site uses its embedded SQLite file; with
//! `GATEHOUSE_TEST_PG_URL=postgres://user@127.0.0.1:PORT` (set by `scripts/test.sh`,
//! which starts a private PostgreSQL) each site gets a fresh database there.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

pub struct TestSite {
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
    pub database_url: Option<String>,
}

impl TestSite {
    /// A scratch site (sample users, content, media; `--role` allowed).
    pub fn new(name: &str) -> TestSite {
        Self::create(name, true)
    }

    /// A non-scratch site with no sample data.
    pub fn plain(name: &str) -> TestSite {
        Self::create(name, false)
    }

    fn create(name: &str, scratch: bool) -> TestSite {
        let database_url = gatehouse_test_pg::base_url()
            .map(|base| gatehouse_test_pg::fresh_database(&base, name).0);
        Self::with_database(name, scratch, database_url)
    }

    /// A site on a given database (`None`: the embedded SQLite file), for tests
    /// that need both backends at once.
    pub fn with_database(name: &str, scratch: bool, database_url: Option<String>) -> TestSite {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("gh-{name}-"))
            .tempdir()
            .expect("tempdir");
        let dir = tmp.path().join("site");
        let mut cmd = Command::new(BIN);
        cmd.arg("site").arg("init").arg(&dir);
        if scratch {
            cmd.arg("--scratch");
        }
        if let Some(url) = &database_url {
            cmd.arg("--database-url").arg(url);
        }
        let out = cmd
            .env_remove("GATEHOUSE_API_KEY")
            .env("GATEHOUSE_CONFIG_DIR", tmp.path().join("config"))
            .output()
            .expect("gatehouse runs");
        assert!(
            out.status.success(),
            "site init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TestSite {
            dir,
            _tmp: tmp,
            database_url,
        }
    }

    /// A `gatehouse` command for this site, with a clean actor environment.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--site")
            .arg(&self.dir)
            .env_remove("GATEHOUSE_API_KEY")
            .env_remove("GATEHOUSE_SITE")
            .env_remove("GATEHOUSE_DATABASE_URL")
            .env_remove("GATEHOUSE_SECRET_STORE")
            .env("GATEHOUSE_CONFIG_DIR", self.config_dir())
            // Scratch directories of this test's servers: beside the site, not in it.
            .env("GATEHOUSE_SCRATCH_DIR", self.scratch_dir());
        cmd
    }

    /// This site's user configuration directory (the audit signing key and
    /// anchors live there), so tests never touch the real one.
    pub fn config_dir(&self) -> PathBuf {
        self._tmp.path().join("config")
    }

    /// Where this site's servers get their scratch directories (outside the site).
    pub fn scratch_dir(&self) -> PathBuf {
        self.dir.parent().unwrap().join("scratch")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("gatehouse runs")
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "gatehouse {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    pub fn ok_json(&self, args: &[&str]) -> serde_json::Value {
        let text = self.ok(args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// Runs and expects failure; returns the error code and checks stdout is empty.
    pub fn fails(&self, args: &[&str]) -> Failure {
        failure(self.run(args), args)
    }

    pub fn mint(&self, roles: &str) -> (String, String) {
        let v = self.ok_json(&[
            "keys", "mint", "--label", "test key", "--roles", roles, "--json",
        ]);
        (
            v["key"].as_str().unwrap().to_string(),
            v["id"].as_str().unwrap().to_string(),
        )
    }

    /// The SQLite database file (for tests that tamper with it).
    pub fn db_file(&self) -> Option<PathBuf> {
        self.database_url
            .is_none()
            .then(|| self.dir.join("gatehouse.db"))
    }

    /// Another process takes the lock every audit entry needs (SQLite's write
    /// lock; PostgreSQL's audit head), so calls wait for their entries until
    /// [`Locker::release`].
    pub fn hold_audit_writes(&self) -> Locker {
        match &self.database_url {
            Some(url) => {
                let mut psql = Command::new("psql");
                psql.arg(url).args(["-qAt", "-v", "ON_ERROR_STOP=1"]);
                Locker::hold(
                    psql,
                    "BEGIN; LOCK TABLE audit_head IN ACCESS EXCLUSIVE MODE; SELECT 'locked';",
                )
            }
            None => {
                let mut sqlite3 = Command::new("sqlite3");
                sqlite3.arg(self.dir.join("gatehouse.db"));
                Locker::hold(sqlite3, "BEGIN IMMEDIATE; SELECT 'locked';")
            }
        }
    }

    /// Runs SQL against the site's database directly (psql, or SQLite in this
    /// process), printed as the `sqlite3` shell prints it: columns joined by `|`,
    /// one row a line, NULL empty. SQLite is opened here rather than through the
    /// `sqlite3` program so the tests that tamper with a site also run where
    /// that program is absent (Windows, under Wine).
    pub fn sql(&self, statement: &str) -> String {
        match &self.database_url {
            Some(url) => gatehouse_test_pg::psql(url, statement),
            None => sqlite_sql(&self.dir.join("gatehouse.db"), statement)
                .unwrap_or_else(|e| panic!("sql failed: {e}")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Appends `tables` (`[approvals]`, `[serve]`, …) to the site's gatehouse.toml.
    pub fn append_to_site_file(&self, tables: &str) {
        let path = self.dir.join("gatehouse.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n{tables}\n")).unwrap();
    }
}

/// Every statement of `sql` on the SQLite file `db`, the rows printed as the
/// `sqlite3` shell prints them.
fn sqlite_sql(db: &Path, sql: &str) -> rusqlite::Result<String> {
    use rusqlite::fallible_iterator::FallibleIterator as _;
    use rusqlite::types::ValueRef;
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    let mut lines = Vec::new();
    let mut batch = rusqlite::Batch::new(&conn, sql);
    while let Some(mut stmt) = batch.next()? {
        let columns = stmt.column_count();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(columns);
            for i in 0..columns {
                cells.push(match row.get_ref(i)? {
                    ValueRef::Null => String::new(),
                    ValueRef::Integer(n) => n.to_string(),
                    ValueRef::Real(x) => format!("{x:?}"),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                });
            }
            lines.push(cells.join("|"));
        }
    }
    Ok(lines.join("\n").trim().to_string())
}

pub struct Failure {
    pub code: String,
    pub stderr: String,
}

pub fn failure(out: Output, args: &[&str]) -> Failure {
    assert!(
        !out.status.success(),
        "gatehouse {args:?} should have failed"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout must stay clean on failure, got {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("error[")
                .and_then(|r| r.split_once(']'))
                .map(|(c, _)| c.to_string())
        })
        .or_else(|| {
            stderr.lines().find_map(|l| {
                serde_json::from_str::<serde_json::Value>(l).ok()?["error"]["code"]
                    .as_str()
                    .map(str::to_owned)
            })
        })
        .unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    Failure { code, stderr }
}

/// The absolute path of `tests/fixtures/<name>` (a stored connection's
/// program runs in a scratch directory, so relative paths would not do).
pub fn fixture(name: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// A site with 6 audit entries, each written by a separate CLI process (each
/// of which ends cleanly, so each signs a checkpoint).
pub fn site_with_history(name: &str) -> TestSite {
    let site = TestSite::new(name);
    let (_, id) = site.mint("viewer");
    site.mint("editor");
    site.ok(&[
        "users",
        "create",
        "--email",
        "x@example.com",
        "--roles",
        "viewer",
    ]);
    site.ok(&["keys", "revoke", &id]);
    site.ok(&[
        "users",
        "update",
        "--email",
        "x@example.com",
        "--roles",
        "author",
    ]);
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["entries"], 6);
    site
}

/// A TCP port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `cmd` run inside a user and mount namespace of its own (`unshare -rm`), so
/// a test can give one process real mounts (a small full tmpfs, a read-only
/// bind) without root and without touching anyone else's view. `script` is
/// `sh -c` text that sets the mounts up and runs the command as `"$@"`; the
/// mounts end with it.
pub fn in_namespace(cmd: &Command, script: &str) -> Command {
    let mut outer = Command::new("unshare");
    outer
        .args(["-rm", "sh", "-c", script, "sh"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => outer.env(key, value),
            None => outer.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        outer.current_dir(dir);
    }
    outer
}

/// Stores connection `name` to the hostile fixture server, default profile.
pub fn add_hostile(site: &TestSite, name: &str) {
    site.ok(&[
        "connections",
        "add",
        name,
        "--",
        "python3",
        &fixture("hostile.py"),
    ]);
}

/// Another process holding a database lock: `shell` (sqlite3 or psql) runs
/// `statement`, which must end by printing `locked`; the lock is held until
/// [`Locker::release`].
pub struct Locker {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
}

impl Locker {
    pub fn hold(mut shell: Command, statement: &str) -> Locker {
        use std::io::{BufRead, BufReader, Write};
        let mut child = shell
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{statement}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Locker { child, stdin }
    }

    /// Sends `finish` (e.g. `ROLLBACK;`, or nothing), ends the shell's input
    /// and waits for it.
    pub fn release(mut self, finish: &str) -> std::process::ExitStatus {
        use std::io::Write;
        writeln!(self.stdin, "{finish}").unwrap();
        drop(self.stdin);
        self.child.wait().unwrap()
    }
}

/// Whether `programs` are all installed (in `/usr/bin` or `/bin`). A test
/// that needs a missing one skips, saying so, except under CI (`CI` set),
/// where a missing program is a failure: scripts/setup.sh installs them.
pub fn installed(programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| {
            !["/usr/bin", "/bin"]
                .iter()
                .any(|d| Path::new(d).join(p).exists())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "not installed: {missing:?} (scripts/setup.sh installs them)"
    );
    eprintln!("SKIPPED: not installed: {missing:?} (scripts/setup.sh installs them)");
    false
}
