//! A site is a folder with a small `gatehouse.toml` and, by default, an embedded
//! SQLite database (`gatehouse.db`, WAL mode) beside it.
//!
//! Settings resolve in one place, [`Settings::resolve`]: flag > environment >
//! `gatehouse.toml` > default.
//!
//! Map: this file finds, creates and opens the folder; [`content`], [`media`]
//! and [`config`] are the permission-checked APIs over what the site holds;
//! [`checkpoint`] signs the head of its audit log with a key kept outside the
//! database (on this machine, per site folder); [`serve`] is the `[serve]`
//! table (the settings of `gatehouse serve`, their rules, and saving them
//! without disturbing the rest of the file); [`seed`] fills scratch sites with sample data; [`portable`] exports
//! and imports a whole site, refusing one whose keys or users differ from
//! what its audit log says ([`replay`]); [`remembered`] is what the desktop
//! app keeps between runs (recent sites, last screen) and how it names a
//! site's database.

pub mod checkpoint;
pub mod config;
pub mod content;
pub mod media;
pub mod portable;
pub mod remembered;
pub mod replay;
pub mod seed;
pub mod serve;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, codes};
use crate::store::{Store, sqlite_url};

pub const SITE_FILE: &str = "gatehouse.toml";
pub const DB_FILE: &str = "gatehouse.db";
pub const ENV_SITE: &str = "GATEHOUSE_SITE";
pub const ENV_DATABASE_URL: &str = "GATEHOUSE_DATABASE_URL";

/// The contents of `gatehouse.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SiteFile {
    pub name: String,
    /// A scratch site allows synthetic `--role` actors and holds sample data.
    #[serde(default)]
    pub scratch: bool,
    /// Where the site's data lives when not in the embedded SQLite file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    /// `[limits]` and `[approvals]`, each checked on its own when the file is
    /// read: a bad one is refused by what uses it (a connection, a server, a
    /// call), never by revoking a key or reading the audit. Read through
    /// [`SiteFile::limits`] and [`SiteFile::approvals`].
    #[serde(skip)]
    policies: Policies,
}

/// A table of gatehouse.toml as read: its value, or why it was refused.
type Checked<T> = std::result::Result<T, Refused>;

/// Why a table was refused, kept to be raised where the table is used.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refused {
    message: String,
    hint: &'static str,
}

impl Refused {
    fn error(&self) -> Error {
        Error::new(codes::SITE_CONFIG_INVALID, self.message.clone()).hint(self.hint)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Policies {
    limits: Checked<SiteLimits>,
    approvals: Checked<Option<crate::access::approvals::ApprovalPolicy>>,
}

impl Default for Policies {
    fn default() -> Policies {
        Policies {
            limits: Ok(SiteLimits::default()),
            approvals: Ok(None),
        }
    }
}

impl SiteFile {
    /// `[limits]`: the ceilings of every connection that sets none of its own.
    pub fn limits(&self) -> Result<SiteLimits> {
        self.policies.limits.clone().map_err(|r| r.error())
    }

    /// `[approvals]`: which calls wait for a person's yes (`None`: none do).
    pub fn approvals(&self) -> Result<Option<&crate::access::approvals::ApprovalPolicy>> {
        match &self.policies.approvals {
            Ok(policy) => Ok(policy.as_ref()),
            Err(r) => Err(r.error()),
        }
    }

    /// Both tables, checked before a server starts, so a bad policy stops it
    /// at once instead of at its first call.
    pub fn check_policies(&self) -> Result<()> {
        self.limits()?;
        self.approvals()?;
        Ok(())
    }
}

/// Memory ceiling of a connection that sets none (`--max-rss`): 1 GiB.
pub const DEFAULT_MAX_RSS_MIB: u64 = 1024;
/// CPU-time budget of a connection that sets none (`--max-cpu`): 10 minutes.
pub const DEFAULT_MAX_CPU_SECONDS: u64 = 600;

/// The `[limits]` table of `gatehouse.toml`: the memory ceiling and CPU-time
/// budget a connection gets unless it sets its own (higher or lower). A
/// server without them could hold the admin's machine (a runaway loop, a
/// leak) until someone noticed.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SiteLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cpu_seconds: Option<u64>,
}

impl SiteLimits {
    /// The default memory ceiling, in bytes.
    pub fn max_rss_bytes(&self) -> u64 {
        self.max_rss_mib.unwrap_or(DEFAULT_MAX_RSS_MIB) << 20
    }

    /// The default CPU-time budget, in milliseconds.
    pub fn max_cpu_ms(&self) -> u64 {
        self.max_cpu_seconds.unwrap_or(DEFAULT_MAX_CPU_SECONDS) * 1000
    }

    fn validate(&self) -> std::result::Result<(), String> {
        if self.max_rss_mib.is_some_and(|m| m < 16) {
            return Err("limits.max_rss_mib is below 16".into());
        }
        if self.max_cpu_seconds == Some(0) {
            return Err("limits.max_cpu_seconds is 0".into());
        }
        if self.max_rss_mib.is_some_and(|m| m > u64::MAX >> 20)
            || self.max_cpu_seconds.is_some_and(|s| s > u64::MAX / 1000)
        {
            return Err("a limit in [limits] is out of range".into());
        }
        Ok(())
    }
}

/// What the caller asked for on the command line (or the UI).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub site: Option<PathBuf>,
    pub database_url: Option<String>,
}

/// Resolved settings of one site.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub database_url: Option<String>,
}

impl Settings {
    /// Flag > environment > default (the current directory); the database URL
    /// continues to `gatehouse.toml` and then the embedded file in [`open`].
    pub fn resolve(flags: &Flags, env: impl Fn(&str) -> Option<String>) -> Result<Settings> {
        let dir = match flags
            .site
            .clone()
            .or_else(|| env(ENV_SITE).filter(|s| !s.is_empty()).map(PathBuf::from))
        {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(|e| {
                Error::new(
                    codes::IO_ERROR,
                    format!("cannot read the current directory: {e}"),
                )
            })?,
        };
        let database_url = flags
            .database_url
            .clone()
            .or_else(|| env(ENV_DATABASE_URL).filter(|s| !s.is_empty()));
        Ok(Settings { dir, database_url })
    }
}

/// An open site: its folder, its settings file and its store.
#[derive(Debug, Clone)]
pub struct Site {
    pub dir: PathBuf,
    pub file: SiteFile,
    pub store: Store,
}

impl Site {
    pub fn is_scratch(&self) -> bool {
        self.file.scratch
    }

    /// A clean shutdown: signs an audit checkpoint if the log grew (see
    /// [`crate::site::checkpoint`]), then closes the store.
    pub async fn close(&self) {
        crate::site::checkpoint::on_close(self).await;
        self.store.close().await;
    }
}

/// Reads and checks `gatehouse.toml` (without opening the database).
pub fn read_site_file(dir: &Path) -> Result<SiteFile> {
    let text = read_site_text(dir)?;
    parse_site_file(&text, &dir.join(SITE_FILE))
}

/// The text of `dir`'s `gatehouse.toml`.
fn read_site_text(dir: &Path) -> Result<String> {
    let path = dir.join(SITE_FILE);
    std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::new(codes::SITE_NOT_FOUND, format!("{} is not a Gatehouse site (no {SITE_FILE})", dir.display()))
                .hint("pass --site DIR or set GATEHOUSE_SITE, or create one with `gatehouse site init DIR`")
        } else {
            Error::new(codes::IO_ERROR, format!("cannot read {}: {e}", path.display()))
        }
    })
}

/// Parses and checks the text of `gatehouse.toml` (found at `path`).
fn parse_site_file(text: &str, path: &Path) -> Result<SiteFile> {
    parse_site_parts(text, path).map(|(file, _)| file)
}

/// [`parse_site_file`], and the `[serve]` table it leaves unread for
/// [`serve::read`]: a bad value there stops only what serves, as a bad
/// `[limits]` or `[approvals]` stops only what uses it.
fn parse_site_parts(text: &str, path: &Path) -> Result<(SiteFile, Option<toml::Value>)> {
    let invalid = |e: toml::de::Error| {
        Error::new(
            codes::SITE_CONFIG_INVALID,
            format!("{} is not valid: {}", path.display(), e.message()),
        )
        .hint("the file holds `name`, `scratch`, optionally `database_url`, and the tables [limits], [serve] and [approvals]")
    };
    let mut table: toml::Table = toml::from_str(text).map_err(invalid)?;
    let serve = table.remove("serve");
    let limits = table.remove("limits");
    let approvals = table.remove("approvals");
    let mut file: SiteFile = toml::Value::Table(table).try_into().map_err(invalid)?;
    let refused = |hint: &'static str| {
        move |why: String| Refused {
            message: format!("{} is not valid: {why}", path.display()),
            hint,
        }
    };
    file.policies.limits = checked_table(limits, "limits", SiteLimits::validate)
        .map(Option::unwrap_or_default)
        .map_err(refused("give limits.max_rss_mib of at least 16 and limits.max_cpu_seconds of at least 1, or leave them out for 1 GiB and 10 minutes"));
    file.policies.approvals = checked_table(approvals, "approvals", crate::access::approvals::ApprovalPolicy::validate)
        .map_err(refused("[approvals] holds tools, effects (read, write, publish, delete), roles, decide (client or owner) and timeout_seconds"));
    Ok((file, serve))
}

/// The table `[name]` when there is one, read and then checked by `validate`;
/// why not, when it is refused.
fn checked_table<T: serde::de::DeserializeOwned>(
    value: Option<toml::Value>,
    name: &str,
    validate: impl FnOnce(&T) -> std::result::Result<(), String>,
) -> std::result::Result<Option<T>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let table: T = value
        .try_into()
        .map_err(|e: toml::de::Error| format!("[{name}]: {}", e.message()))?;
    validate(&table)?;
    Ok(Some(table))
}

fn database_url(dir: &Path, settings_url: Option<&str>, file: &SiteFile) -> Result<String> {
    if let Some(url) = settings_url.or(file.database_url.as_deref()) {
        return Ok(url.to_string());
    }
    let abs = std::path::absolute(dir.join(DB_FILE))
        .map_err(|e| Error::new(codes::IO_ERROR, format!("bad site path: {e}")))?;
    Ok(sqlite_url(&abs))
}

/// Whether the site in `dir` keeps its data on a database server (its
/// `gatehouse.toml` names a `database_url` that is not a SQLite file), read
/// without opening anything. An unreadable file names none.
pub fn names_a_database_server(dir: &Path) -> bool {
    read_site_file(dir).is_ok_and(|file| {
        file.database_url.is_some_and(|url| {
            !matches!(
                crate::store::backend_of(&url),
                Ok(crate::store::DatabaseKind::Sqlite)
            )
        })
    })
}

/// Opens an existing site.
pub async fn open(settings: &Settings) -> Result<Site> {
    open_with(settings, true).await
}

/// Opens an existing site only if its database already holds this build's
/// schema, changing nothing first (`Store::open_as_is`): for checking a
/// site another file names.
pub async fn open_as_is(settings: &Settings) -> Result<Site> {
    open_with(settings, false).await
}

async fn open_with(settings: &Settings, own: bool) -> Result<Site> {
    let file = read_site_file(&settings.dir)?;
    let url = database_url(&settings.dir, settings.database_url.as_deref(), &file)?;
    let store = if own {
        Store::open(&url).await?
    } else {
        Store::open_as_is(&url).await?
    };
    Ok(Site {
        dir: settings.dir.clone(),
        file,
        store,
    })
}

/// `url` without the password of its `user:password@` part or its
/// `password=` query parameter (sqlx reads either), and whether it had one.
///
/// Parsed with the `url` crate, as sqlx parses it. Text that is not a URL
/// (which no store would open) is masked by [`crate::redact::redact_urls`]
/// instead, so a password is never echoed back either way.
pub fn without_password(url: &str) -> (String, bool) {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if crate::redact::replace_url_password(&mut parsed, None) {
                (parsed.to_string(), true)
            } else {
                (url.to_string(), false)
            }
        }
        Err(_) => {
            let masked = crate::redact::redact_urls(url);
            let changed = masked != url;
            (masked, changed)
        }
    }
}

/// Creates a site in `dir` (created if missing). `gatehouse.toml` is written
/// last, atomically, so a failed init leaves no half-made site behind.
pub async fn init(
    dir: &Path,
    name: Option<&str>,
    scratch: bool,
    database_url_flag: Option<&str>,
) -> Result<Site> {
    if dir.join(SITE_FILE).exists() {
        return Err(Error::new(
            codes::SITE_EXISTS,
            format!("{} already holds a site", dir.display()),
        )
        .hint("choose another folder, or use the existing site with --site"));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let dir = std::path::absolute(dir)
        .map_err(|e| Error::new(codes::IO_ERROR, format!("bad site path: {e}")))?;
    let default_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "site".into());
    let file = SiteFile {
        name: name.map(str::to_owned).unwrap_or(default_name),
        scratch,
        // A password never goes into gatehouse.toml: later runs take it from
        // PGPASSWORD, ~/.pgpass, --database-url or GATEHOUSE_DATABASE_URL.
        database_url: database_url_flag.map(|u| without_password(u).0),
        policies: Policies::default(),
    };
    let db_existed = dir.join(DB_FILE).exists();
    let result = async {
        let url = match database_url_flag {
            Some(u) => u.to_string(),
            None => database_url(&dir, None, &file)?,
        };
        let store = Store::open(&url).await?;
        let new_chain = crate::store::audit::committed_head(&store).await?.0 == 0;
        if scratch {
            crate::site::seed::scratch(&store).await?;
        }
        let text = toml::to_string(&file).expect("site file serialises");
        let tmp = dir.join(format!(".{SITE_FILE}.tmp"));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, dir.join(SITE_FILE)))
            .map_err(|e| Error::new(codes::IO_ERROR, format!("cannot write {SITE_FILE}: {e}")))?;
        Ok((store, new_chain))
    }
    .await;
    match result {
        Ok((store, new_chain)) => {
            let site = Site { dir, file, store };
            // A folder that held another site, now with a chain of its own:
            // the old site's anchor here had failed every verify of it as a
            // cut chain, with no way to sign it again.
            match new_chain.then(|| checkpoint::set_aside_anchor(&site)) {
                Some(Ok(Some(aside))) => tracing::warn!(
                    path = %aside.display(),
                    "this folder held another site; its audit anchor was set aside"
                ),
                Some(Err(e)) => {
                    tracing::warn!(code = %e.code, message = %e.message, "could not set the old audit anchor aside")
                }
                _ => {}
            }
            Ok(site)
        }
        Err(e) => {
            if !db_existed {
                for f in [DB_FILE, "gatehouse.db-wal", "gatehouse.db-shm"] {
                    let _ = std::fs::remove_file(dir.join(f));
                }
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The desktop app awaits `open` inside a Tauri command, whose future must
    /// be `Send` for every lifetime; a generic sqlx call (`Migrator::run` with
    /// `Acquire<'a>`) once made that unprovable and broke the app's build.
    #[test]
    fn open_is_send_for_async_hosts() {
        fn assert_send<T: Send>(_: T) {}
        let settings = Settings {
            dir: PathBuf::from("."),
            database_url: None,
        };
        assert_send(open(&settings));
    }

    #[test]
    fn passwords_are_cut_from_stored_urls() {
        assert_eq!(
            without_password("postgres://app:s3cr%40t@db:5432/site?sslmode=require"),
            (
                "postgres://app@db:5432/site?sslmode=require".to_string(),
                true
            )
        );
        assert_eq!(
            without_password("postgres://app@db/site"),
            ("postgres://app@db/site".to_string(), false)
        );
        assert!(!without_password("sqlite:///x.db").1);
        // sqlx takes the password from the query string too.
        assert_eq!(
            without_password("postgres://app@db/site?password=Q2&sslmode=require"),
            ("postgres://app@db/site?sslmode=require".to_string(), true)
        );
        assert_eq!(
            without_password("postgres://app@db/site?PASSWORD=Q2"),
            ("postgres://app@db/site".to_string(), true)
        );
    }

    #[test]
    fn password_of_an_unparseable_url_is_still_cut() {
        let (shown, had) = without_password("postgres://app:hunter2@db:99999/site");
        assert!(had);
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn flag_beats_env_beats_default() {
        let env = |k: &str| match k {
            ENV_SITE => Some("/from/env".to_string()),
            ENV_DATABASE_URL => Some("postgres://env/db".to_string()),
            _ => None,
        };
        let s = Settings::resolve(
            &Flags {
                site: Some("/flag".into()),
                database_url: None,
            },
            env,
        )
        .unwrap();
        assert_eq!(s.dir, PathBuf::from("/flag"));
        assert_eq!(s.database_url.as_deref(), Some("postgres://env/db"));
        let s = Settings::resolve(&Flags::default(), env).unwrap();
        assert_eq!(s.dir, PathBuf::from("/from/env"));
        let s = Settings::resolve(&Flags::default(), |_| None).unwrap();
        assert_eq!(s.dir, std::env::current_dir().unwrap());
        assert_eq!(s.database_url, None);
    }

    /// `[limits]` in gatehouse.toml sets the defaults; absent, they are 1 GiB
    /// and 10 minutes; nonsense is refused where the limits are used, while
    /// the rest of the file reads as usual.
    #[test]
    fn site_limits_default_and_are_read_from_gatehouse_toml() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(SITE_FILE), "name = \"s\"\n").unwrap();
        let file = read_site_file(tmp.path()).unwrap();
        assert_eq!(file.limits().unwrap().max_rss_bytes(), 1 << 30);
        assert_eq!(file.limits().unwrap().max_cpu_ms(), 600_000);
        std::fs::write(
            tmp.path().join(SITE_FILE),
            "name = \"s\"\n[limits]\nmax_rss_mib = 2048\nmax_cpu_seconds = 30\n",
        )
        .unwrap();
        let file = read_site_file(tmp.path()).unwrap();
        assert_eq!(file.limits().unwrap().max_rss_bytes(), 2 << 30);
        assert_eq!(file.limits().unwrap().max_cpu_ms(), 30_000);
        for bad in ["max_rss_mib = 8", "max_cpu_seconds = 0", "max_rss = 1"] {
            std::fs::write(
                tmp.path().join(SITE_FILE),
                format!("name = \"s\"\n[limits]\n{bad}\n"),
            )
            .unwrap();
            let file = read_site_file(tmp.path()).unwrap();
            assert_eq!(file.name, "s");
            let e = file.check_policies().unwrap_err();
            assert_eq!(e.message, file.limits().unwrap_err().message, "{bad}");
            assert_eq!(e.code, codes::SITE_CONFIG_INVALID, "{bad}");
            assert!(e.hint.is_some(), "{bad}");
        }
    }
}
