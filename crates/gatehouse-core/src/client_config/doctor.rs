//! `gatehouse config doctor`: which clients on this machine run Gatehouse, and
//! whether each entry still works.
//!
//! Every file of every client ([`paths::read_targets`], user scope and the given
//! project) that exists is read; an entry counts as Gatehouse's when its program
//! is called `gatehouse` or its args start with `mcp` and name a `--site`. Each
//! entry gets four [`Check`]s, and a fifth where the file is one the installed
//! client ignores:
//! - `file` (only then): the client reads another file (Claude Desktop's MSIX
//!   app ignores `%APPDATA%\Claude`), so this entry never runs;
//! - `command`: the program exists, is a file, and may be executed;
//! - `site`: `--site DIR` holds a readable `gatehouse.toml`;
//! - `key` (inline keys only): the key is well formed, known to the site, not
//!   revoked or expired, and not expiring within [`EXPIRY_WARNING_DAYS`];
//! - `actor`: the actor the entry asks for resolves against the site now,
//!   exactly as `gatehouse mcp` would resolve it at start.
//!
//! A referenced key (`${...}`, `env_vars`, a VS Code input) cannot be checked
//! from here: its check is `skip` with the reason. A project's files came with
//! the project (a cloned repository): the hosts they name, a remote entry's
//! URL or the database server of the site an entry names, are reached only
//! with [`DoctorOptions::trust_project`], as the clients ask before they
//! trust a project's servers. The result is plain data for
//! the CLI's table and `--json`, and for the desktop app.
//!
//! # Caveats
//! The actor check verifies a key as the server does, which records it as used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::paths::{self, Home, Scope};
use super::probe::Probe;
use super::validate::{EntryView, RemoteView};
use super::{API_KEY_ENV, Client};
use crate::access::actor::{self, ActorFlags};
use crate::access::keys::{self, KeyStatus, RawKey};
use crate::error::{Code, Error, codes};
use crate::site::{self, Settings, Site};
use crate::time::now_ms;

/// A key expiring sooner than this many days is reported as a warning.
pub const EXPIRY_WARNING_DAYS: i64 = 7;

/// Everything the doctor found.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct DoctorReport {
    pub files: Vec<FileReport>,
    /// True when every check passed or was skipped.
    pub ok: bool,
}

/// One client file that exists.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct FileReport {
    pub client: Client,
    pub client_name: &'static str,
    pub scope: Scope,
    #[ts(type = "string")]
    pub path: PathBuf,
    /// Set when the file could not be read or parsed (any key in it masked).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub error: Option<String>,
    pub entries: Vec<EntryReport>,
}

/// One Gatehouse entry and its checks.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct EntryReport {
    pub name: String,
    /// The program a local entry starts (empty for a remote entry).
    pub command: String,
    /// The server a remote entry reaches.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub site: Option<PathBuf>,
    pub checks: Vec<Check>,
    pub ok: bool,
}

/// A check's outcome: `warn` (a key about to expire) counts as a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    Skip,
}

/// One check's result, with the error code when it failed on one.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct Check {
    /// `file`, `command`, `site`, `key` or `actor`.
    pub name: &'static str,
    pub status: Status,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub code: Option<Code>,
}

impl Check {
    fn new(name: &'static str, status: Status, message: impl Into<String>) -> Check {
        Check {
            name,
            status,
            message: message.into(),
            code: None,
        }
    }

    fn failed(name: &'static str, err: &Error) -> Check {
        let mut message = err.message.clone();
        if let Some(hint) = &err.hint {
            message.push_str(&format!(" ({hint})"));
        }
        Check {
            name,
            status: Status::Fail,
            message,
            code: Some(err.code),
        }
    }
}

/// What the doctor may use beyond the files.
#[derive(Debug, Clone, Default)]
pub struct DoctorOptions {
    /// The key a referenced remote entry would get (`GATEHOUSE_API_KEY` of
    /// the shell the doctor runs in), to call its server as the client would.
    pub env_key: Option<RawKey>,
    /// Reach the hosts a project's files name (a remote entry's server, a
    /// site's database server); without it their checks are skipped.
    pub trust_project: bool,
}

/// Examines every client file under `home` and, when given, in `project`.
pub async fn doctor(home: &Home, project: Option<&Path>) -> DoctorReport {
    doctor_with(home, project, &DoctorOptions::default()).await
}

/// [`doctor`] with options.
pub async fn doctor_with(
    home: &Home,
    project: Option<&Path>,
    options: &DoctorOptions,
) -> DoctorReport {
    let mut sites: BTreeMap<PathBuf, std::result::Result<Site, Error>> = BTreeMap::new();
    let mut files = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for client in Client::ALL {
        let targets = match project {
            Some(dir) => paths::read_targets(client, home, dir),
            None => paths::read_targets(client, home, &home.dir)
                .into_iter()
                .filter(|t| t.scope == Scope::User)
                .collect(),
        };
        for target in targets {
            if !target.path.is_file() {
                continue;
            }
            // Claude Code's user and local scopes share ~/.claude.json.
            if !seen.insert((client, target.path.clone(), target.servers.clone())) {
                continue;
            }
            files.push(examine(client, &target, &mut sites, options).await);
        }
    }
    for site in sites.into_values().flatten() {
        site.close().await;
    }
    let ok = files
        .iter()
        .all(|f| f.error.is_none() && f.entries.iter().all(|e| e.ok));
    DoctorReport { files, ok }
}

async fn examine(
    client: Client,
    target: &paths::Target,
    sites: &mut BTreeMap<PathBuf, std::result::Result<Site, Error>>,
    options: &DoctorOptions,
) -> FileReport {
    let mut report = FileReport {
        client,
        client_name: client.display_name(),
        scope: target.scope,
        path: target.path.clone(),
        error: None,
        entries: Vec::new(),
    };
    let doc = match std::fs::read_to_string(&target.path)
        .map_err(|e| e.to_string())
        .and_then(|t| super::merge::parse(target.syntax, &t).map_err(|e| e.0))
        .map_err(|e| super::merge::mask_keys(&e))
    {
        Ok(doc) => doc,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    let mut shape = client.shape();
    let servers: Vec<&str> = target.servers.iter().map(String::as_str).collect();
    let doc = match servers.split_last() {
        // A non-default servers path (Claude Code local): re-root the document.
        Some((_, parents)) if target.servers != shape.servers => {
            let mut node = &doc;
            for key in parents {
                node = node.get(*key).unwrap_or(&Value::Null);
            }
            shape.servers = &["mcpServers"];
            node.clone()
        }
        _ => doc,
    };
    for (name, entry) in shape.entries(&doc) {
        let mut entry = match (shape.view(entry), client.spec().remote_shape()) {
            (Ok(view), _) if is_gatehouse(&view) => {
                let trusted = target.scope != Scope::Project || options.trust_project;
                check_entry(name, view, sites, trusted).await
            }
            (Ok(_), _) | (Err(_), None) => continue,
            (Err(_), Some(remote)) => match remote.view(entry) {
                Ok(view) if is_gatehouse_remote(&name, &view) => {
                    check_remote(name, view, target.scope, options).await
                }
                _ => continue,
            },
        };
        if let Some(read) = &target.read_instead {
            let ignored = Error::invalid(
                codes::CONFIG_FILE_IGNORED,
                format!(
                    "{} as installed here ignores this file; it reads {}",
                    client.display_name(),
                    read.display()
                ),
                format!(
                    "run `gatehouse config install {client}` to put the entry in the file it \
                     reads, then remove it from this one"
                ),
            );
            entry.checks.insert(0, Check::failed("file", &ignored));
            entry.ok = false;
        }
        report.entries.push(entry);
    }
    report
}

fn is_gatehouse(view: &EntryView) -> bool {
    let program = Path::new(&view.command)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    program == "gatehouse"
        || (view.args.first().map(String::as_str) == Some("mcp")
            && view.args.iter().any(|a| a == "--site"))
}

/// The value following `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// `trusted`: the entry's site may be opened on a database server (the entry
/// is the user's, or the project was said to be trusted).
async fn check_entry(
    name: String,
    view: EntryView,
    sites: &mut BTreeMap<PathBuf, std::result::Result<Site, Error>>,
    trusted: bool,
) -> EntryReport {
    let mut checks = vec![check_command(&view.command)];

    let site_dir = flag(&view.args, "--site").map(PathBuf::from);
    let site = match &site_dir {
        None => {
            checks.push(Check::new(
                "site",
                Status::Fail,
                "the entry passes no --site, so the server uses its working directory",
            ));
            None
        }
        Some(dir) if !trusted && site::names_a_database_server(dir) => {
            checks.push(Check::new(
                "site",
                Status::Skip,
                format!(
                    "{}: not opened, its database is on a server this project's file names; run with --trust-project to reach it",
                    dir.display()
                ),
            ));
            None
        }
        Some(dir) => {
            let opened = match sites.get(dir) {
                Some(known) => known.clone(),
                None => {
                    let result = open_site(dir).await;
                    let copy = result.clone();
                    sites.insert(dir.clone(), result);
                    copy
                }
            };
            match opened {
                Ok(site) => {
                    checks.push(Check::new(
                        "site",
                        Status::Pass,
                        format!("{} (site \"{}\")", dir.display(), site.file.name),
                    ));
                    Some(site)
                }
                Err(e) => {
                    checks.push(Check::failed("site", &e));
                    None
                }
            }
        }
    };

    let inline_key = view
        .env
        .get(API_KEY_ENV)
        .filter(|v| !is_reference(v))
        .map(|v| RawKey::new(v.clone()));
    let referenced = view.env.get(API_KEY_ENV).is_some_and(|v| is_reference(v))
        || view.forwarded.iter().any(|k| k == API_KEY_ENV);
    let mut key_failed = false;
    match (&inline_key, &site) {
        (Some(key), Some(site)) => {
            let check = check_key(site, key).await;
            key_failed = check.status == Status::Fail;
            checks.push(check);
        }
        (Some(_), None) => checks.push(Check::new("key", Status::Skip, "no site to check it in")),
        (None, _) if referenced => checks.push(Check::new(
            "key",
            Status::Skip,
            format!("referenced, not written: the client supplies {API_KEY_ENV} at start"),
        )),
        (None, _) => {}
    }

    if let Some(site) = &site {
        if referenced && inline_key.is_none() {
            checks.push(Check::new(
                "actor",
                Status::Skip,
                "the API key the client supplies at start",
            ));
        } else if key_failed {
            checks.push(Check::new(
                "actor",
                Status::Skip,
                "not resolved: the entry's key is refused (see the key check)",
            ));
        } else {
            let flags = ActorFlags {
                email: flag(&view.args, "--email").map(String::from),
                role: flag(&view.args, "--role").map(String::from),
                api_key: flag(&view.args, "--api-key").map(RawKey::new),
                env_api_key: inline_key.clone(),
                key_id: flag(&view.args, "--key-id").map(String::from),
            };
            checks.push(
                match actor::resolve(&site.store, site.is_scratch(), &flags).await {
                    Ok(actor) => {
                        Check::new("actor", Status::Pass, format!("runs as {}", actor.label()))
                    }
                    Err(e) => Check::failed("actor", &e),
                },
            );
        }
    }
    let ok = checks
        .iter()
        .all(|c| matches!(c.status, Status::Pass | Status::Skip));
    EntryReport {
        name,
        command: view.command,
        url: None,
        site: site_dir,
        checks,
        ok,
    }
}

/// A remote entry is Gatehouse's when it sends a Gatehouse key (written or
/// referenced through `GATEHOUSE_API_KEY`), or when it is named like one and
/// reaches an `/mcp` endpoint, the path `gatehouse serve` answers on.
fn is_gatehouse_remote(name: &str, view: &RemoteView) -> bool {
    let auth = view.authorization.as_deref().unwrap_or_default();
    auth.contains(keys::PREFIX)
        || auth.contains(API_KEY_ENV)
        || view.bearer_env.as_deref() == Some(API_KEY_ENV)
        || (name.to_ascii_lowercase().starts_with("gatehouse")
            && url::Url::parse(&view.url)
                .is_ok_and(|u| u.path().trim_end_matches('/').ends_with("/mcp")))
}

/// The checks of a remote entry: the URL is one a key may be sent to, the
/// key is well formed, and the server answers with it: who it is and what the
/// key may see.
async fn check_remote(
    name: String,
    view: RemoteView,
    scope: Scope,
    options: &DoctorOptions,
) -> EntryReport {
    let mut checks = Vec::new();
    let url_ok = match super::spec::check_url(&view.url) {
        Ok(_) => {
            checks.push(Check::new("url", Status::Pass, view.url.clone()));
            true
        }
        Err(e) => {
            checks.push(Check::failed("url", &e));
            false
        }
    };
    let written = view
        .authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|token| token.starts_with(keys::PREFIX));
    let referenced = written.is_none()
        && (view.bearer_env.is_some()
            || view
                .authorization
                .as_deref()
                .is_some_and(|a| a.contains('$') || a.contains("{env:")));
    let key = match (written, referenced) {
        (Some(raw), _) => {
            let key = RawKey::new(raw.to_string());
            match keys::parse(key.expose()) {
                Ok(parsed) => {
                    checks.push(Check::new(
                        "key",
                        Status::Pass,
                        format!("key {} is written in the entry", parsed.id),
                    ));
                    Some(key)
                }
                Err(_) => {
                    checks.push(Check::failed("key", &keys::Refusal::Malformed.error(None)));
                    None
                }
            }
        }
        // A project's file came with the project (a cloned repository): its
        // URL may be anyone's, and this shell's key is sent to no URL the
        // user did not write. The client asks before it trusts the file.
        (None, true) if scope == Scope::Project && options.env_key.is_some() => {
            checks.push(Check::new(
                "key",
                Status::Skip,
                format!("referenced in a project's file: {API_KEY_ENV} from this shell is not sent to a URL the project names; check it with --scope user entries, or call it yourself"),
            ));
            None
        }
        (None, true) => match &options.env_key {
            Some(key) => {
                checks.push(Check::new(
                    "key",
                    Status::Pass,
                    format!("referenced; using {API_KEY_ENV} from this shell, as the client would"),
                ));
                Some(key.clone())
            }
            None => {
                checks.push(Check::new(
                    "key",
                    Status::Skip,
                    format!("referenced, not written: the client supplies {API_KEY_ENV} at start; export it here to check it"),
                ));
                None
            }
        },
        (None, false) => None,
    };
    let key_broken = checks
        .iter()
        .any(|c| c.name == "key" && c.status == Status::Fail);
    let skip_actor = referenced && key.is_none();
    if url_ok && !key_broken && scope == Scope::Project && !options.trust_project {
        checks.push(Check::new(
            "server",
            Status::Skip,
            "not called: this URL came with the project's file and may be anyone's; run with --trust-project to call it",
        ));
    } else if !url_ok || key_broken {
        checks.push(Check::new(
            "server",
            Status::Skip,
            "not called: see the checks above",
        ));
    } else if skip_actor {
        checks.push(Check::new(
            "server",
            Status::Skip,
            "not called without the key the client would send",
        ));
    } else {
        let who = match key
            .as_ref()
            .and_then(|k| keys::parse(k.expose()).ok().map(|p| p.id.to_string()))
        {
            Some(id) => format!("key {id}"),
            None => "the anonymous public actor".to_string(),
        };
        checks.push(match super::probe::probe(&view.url, key.as_ref()).await {
            Probe::Answered {
                server,
                version,
                tools,
                actor,
            } if server == "gatehouse" => Check::new(
                "server",
                Status::Pass,
                format!(
                    // The server's own word on the actor when it gives one
                    // (it knows the key's roles; this machine may not).
                    "gatehouse {version} answers as {}, who sees {} tool{}: {}",
                    actor.unwrap_or(who),
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" },
                    tools.join(", ")
                ),
            ),
            Probe::Answered { server, .. } => Check {
                code: Some(codes::CONFIG_REMOTE_FAILED),
                ..Check::new(
                    "server",
                    Status::Fail,
                    format!("the server there is {server:?}, not gatehouse"),
                )
            },
            Probe::Refused { status, message } => Check {
                code: Some(codes::CONFIG_REMOTE_FAILED),
                ..Check::new(
                    "server",
                    Status::Fail,
                    format!(
                        "refused {who} (HTTP {status}: {}); mint a new key with `gatehouse keys mint` and reinstall",
                        super::merge::mask_keys(&message)
                    ),
                )
            },
            Probe::Failed(why) => Check {
                code: Some(codes::CONFIG_REMOTE_FAILED),
                ..Check::new("server", Status::Fail, super::merge::mask_keys(&why))
            },
        });
    }
    let ok = checks
        .iter()
        .all(|c| matches!(c.status, Status::Pass | Status::Skip));
    EntryReport {
        name,
        command: String::new(),
        url: Some(super::merge::mask_keys(&view.url)),
        site: None,
        checks,
        ok,
    }
}

/// The program must exist, be a file, and be executable: a copied binary
/// that lost its mode bit fails at every client start just as a missing one.
fn check_command(command: &str) -> Check {
    let fail = |code: Code, what: &str, fix: &str| Check {
        code: Some(code),
        ..Check::new("command", Status::Fail, format!("{command} {what} ({fix})"))
    };
    let reinstall = "reinstall Gatehouse or re-run `gatehouse config install`";
    match std::fs::metadata(command) {
        Err(_) => fail(codes::COMMAND_NOT_FOUND, "does not exist", reinstall),
        Ok(meta) if !meta.is_file() => fail(codes::COMMAND_NOT_FOUND, "is not a file", reinstall),
        Ok(meta) if !executable(&meta) => fail(
            codes::COMMAND_NOT_EXECUTABLE,
            "is not executable",
            "make it executable with `chmod +x`, or reinstall Gatehouse",
        ),
        Ok(_) => Check::new("command", Status::Pass, format!("{command} exists")),
    }
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// Windows runs any file by its extension; there is no mode bit to check.
#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

/// `${X}`, `$X`, `${env:X}`, `{env:X}`, `${input:x}`, `${{ secrets.X }}`.
fn is_reference(value: &str) -> bool {
    value.starts_with('$') || value.starts_with("{env:")
}

/// The site an entry names, as it is: the entry may come from a project's
/// file, whose site folder (and its `database_url`) anyone who made the
/// project chose, so nothing is created or migrated, and no password of
/// this host's is sent (`site::open_as_is`).
async fn open_site(dir: &Path) -> std::result::Result<Site, Error> {
    site::open_as_is(&Settings {
        dir: dir.to_path_buf(),
        database_url: None,
    })
    .await
}

/// Known, active and not about to expire, from the key list (no secret check:
/// the actor check does that).
async fn check_key(site: &Site, key: &RawKey) -> Check {
    let Ok(parsed) = keys::parse(key.expose()) else {
        return Check::failed("key", &keys::Refusal::Malformed.error(None));
    };
    let id = parsed.id.to_string();
    let list = match keys::list(&site.store).await {
        Ok(list) => list,
        Err(e) => return Check::failed("key", &e),
    };
    let Some(info) = list.into_iter().find(|k| k.id == id) else {
        return Check::failed("key", &keys::Refusal::Unknown.error(Some(&id)));
    };
    match info.status {
        KeyStatus::Revoked => Check::failed("key", &keys::Refusal::Revoked.error(Some(&id))),
        KeyStatus::Expired => Check::failed("key", &keys::Refusal::Expired.error(Some(&id))),
        KeyStatus::Active => {
            let soon = now_ms() + EXPIRY_WARNING_DAYS * 24 * 3600 * 1000;
            match info.expires_at {
                Some(at) if at <= soon => Check {
                    code: Some(codes::KEY_EXPIRING),
                    ..Check::new(
                        "key",
                        Status::Warn,
                        format!(
                            "key {id} expires at {}; roll it with `gatehouse keys roll {id}`",
                            crate::time::rfc3339(at)
                        ),
                    )
                },
                _ => Check::new("key", Status::Pass, format!("key {id} is active")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_config::Os;
    use serde_json::json;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn claude_desktop_entry() -> String {
        serde_json::json!({"mcpServers": {"gatehouse": {
            "command": std::env::current_exe().unwrap(),
            "args": ["mcp", "--site", "/nonexistent/site"],
        }}})
        .to_string()
    }

    /// With the MSIX package installed, Claude Desktop reads only the
    /// package's file: an entry in `%APPDATA%\Claude` is flagged as never run.
    #[tokio::test]
    async fn claude_desktop_entry_in_the_file_the_msix_app_ignores_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let (roaming, local) = (dir.path().join("Roaming"), dir.path().join("Local"));
        let home = Home::new(Os::Windows, dir.path().join("home"), |k| match k {
            "APPDATA" => Some(roaming.to_string_lossy().into_owned()),
            "LOCALAPPDATA" => Some(local.to_string_lossy().into_owned()),
            _ => None,
        });
        let legacy = roaming.join("Claude/claude_desktop_config.json");
        write(&legacy, &claude_desktop_entry());

        // The older installer: its %APPDATA% file is the one read, nothing flagged.
        let report = doctor(&home, None).await;
        let [file] = &report.files[..] else {
            panic!("{report:#?}")
        };
        assert_eq!(file.path, legacy);
        assert!(file.entries[0].checks.iter().all(|c| c.name != "file"));

        let msix = local.join(
            "Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json",
        );
        write(&msix, &claude_desktop_entry());
        let report = doctor(&home, None).await;
        let files: Vec<_> = report
            .files
            .iter()
            .filter(|f| f.client == Client::ClaudeDesktop)
            .collect();
        assert_eq!(files.len(), 2, "{report:#?}");
        let read = files.iter().find(|f| f.path == msix).unwrap();
        assert!(read.entries[0].checks.iter().all(|c| c.name != "file"));
        let ignored = files.iter().find(|f| f.path == legacy).unwrap();
        let check = &ignored.entries[0].checks[0];
        assert_eq!(
            (check.name, check.status, check.code),
            ("file", Status::Fail, Some(codes::CONFIG_FILE_IGNORED))
        );
        assert!(
            check.message.contains(&msix.display().to_string()),
            "{}",
            check.message
        );
        assert!(!ignored.entries[0].ok && !report.ok);
    }

    #[test]
    fn command_must_be_an_executable_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let code = |p: &Path| check_command(p.to_str().unwrap()).code;
        assert_eq!(code(&missing), Some(codes::COMMAND_NOT_FOUND));
        assert_eq!(code(dir.path()), Some(codes::COMMAND_NOT_FOUND));
        let program = dir.path().join("gatehouse");
        write(&program, "#!/bin/sh\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |m| std::fs::Permissions::from_mode(m);
            std::fs::set_permissions(&program, mode(0o644)).unwrap();
            assert_eq!(code(&program), Some(codes::COMMAND_NOT_EXECUTABLE));
            std::fs::set_permissions(&program, mode(0o755)).unwrap();
        }
        let ok = check_command(program.to_str().unwrap());
        assert_eq!((ok.status, ok.code), (Status::Pass, None));
    }

    /// opencode reads `opencode.jsonc` as well as `opencode.json`.
    #[tokio::test]
    async fn opencode_jsonc_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(Os::Linux, dir.path().to_path_buf(), |_| None);
        let user = dir.path().join(".config/opencode/opencode.jsonc");
        let exe = std::env::current_exe().unwrap();
        let text = format!(
            "// mine\n{{\n  \"mcp\": {{\n    \"gatehouse\": {{ \"type\": \"local\", \"command\": [{:?}, \"mcp\", \"--site\", \"/nonexistent/site\"] }}, // ours\n  }},\n}}\n",
            exe.to_str().unwrap()
        );
        write(&user, &text);
        let project = tempfile::tempdir().unwrap();
        // Both names in one folder: both are read.
        let (json, jsonc) = (
            project.path().join("opencode.json"),
            project.path().join("opencode.jsonc"),
        );
        write(&json, "{\"mcp\": {}}\n");
        write(&jsonc, &text);
        let report = doctor(&home, Some(project.path())).await;
        let files: Vec<&FileReport> = report
            .files
            .iter()
            .filter(|f| f.client == Client::Opencode)
            .collect();
        let paths: Vec<&PathBuf> = files.iter().map(|f| &f.path).collect();
        assert_eq!(paths, [&user, &json, &jsonc], "{report:#?}");
        for file in [files[0], files[2]] {
            assert_eq!(file.entries.len(), 1, "{file:#?}");
            assert_eq!(file.entries[0].checks[0].status, Status::Pass);
        }
    }

    /// A tiny MCP endpoint over HTTP/1.1: answers `initialize` and
    /// `tools/list` when the bearer token is `good`, 401 otherwise. It stands
    /// in for `gatehouse serve`, speaking only what the doctor sends.
    async fn tiny_server(good: String) -> (String, tokio::task::JoinHandle<()>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let good = good.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let (head, body) = loop {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let head = text[..end].to_string();
                            let len: usize = head
                                .lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.eq_ignore_ascii_case("content-length")
                                        .then(|| v.trim().parse().ok())?
                                })
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                break (head, buf[end + 4..end + 4 + len].to_vec());
                            }
                        }
                    };
                    let auth = head.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("authorization")
                            .then(|| v.trim().to_string())
                    });
                    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let (status, reply) = if auth.as_deref() != Some(good.as_str()) {
                        (
                            "401 Unauthorized",
                            json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32001, "message": "KEY_UNKNOWN: unknown key"}}),
                        )
                    } else {
                        match msg["method"].as_str() {
                            Some("initialize") => (
                                "200 OK",
                                json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "gatehouse", "version": "9.9.9"}}}),
                            ),
                            Some("tools/list") => (
                                "200 OK",
                                json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                                "tools": [{"name": "content_list"}, {"name": "content_read"}]}}),
                            ),
                            _ => ("202 Accepted", Value::Null),
                        }
                    };
                    let body = if reply.is_null() {
                        String::new()
                    } else {
                        reply.to_string()
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        (url, task)
    }

    /// The doctor calls a remote entry's server with the entry's key and
    /// reports what it answers: the key and the tools it sees, a refused key
    /// as a failure with its code, a referenced key with the shell's key (or
    /// skipped without one).
    #[tokio::test]
    async fn remote_entries_are_called_with_their_key() {
        let good = keys::generate().1;
        let bad = keys::generate().1;
        let (url, server) = tiny_server(format!("Bearer {}", good.expose())).await;
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(Os::Linux, dir.path().to_path_buf(), |_| None);
        let entry =
            |key: &str| json!({"url": url, "headers": {"Authorization": format!("Bearer {key}")}});
        write(
            &dir.path().join(".cursor/mcp.json"),
            &json!({"mcpServers": {
                "gatehouse": entry(good.expose()),
                "gatehouse-old": entry(bad.expose()),
                "other": {"url": "https://elsewhere.example/mcp"},
            }})
            .to_string(),
        );
        write(
            &dir.path().join(".claude.json"),
            &json!({"mcpServers": {"gatehouse": {"type": "http", "url": url,
                "headers": {"Authorization": "Bearer ${GATEHOUSE_API_KEY}"}}}})
            .to_string(),
        );
        let report = doctor(&home, None).await;
        let file = |client: Client| report.files.iter().find(|f| f.client == client).unwrap();
        let cursor = file(Client::Cursor);
        assert_eq!(cursor.entries.len(), 2, "{cursor:#?}");
        let server_check = |e: &EntryReport| {
            e.checks
                .iter()
                .find(|c| c.name == "server")
                .unwrap()
                .clone()
        };
        let id = keys::parse(good.expose()).unwrap().id.to_string();
        let ok = server_check(&cursor.entries[0]);
        assert_eq!(ok.status, Status::Pass, "{ok:?}");
        assert!(
            ok.message.contains(&format!("key {id}")) && ok.message.contains("content_read"),
            "{}",
            ok.message
        );
        assert_eq!(cursor.entries[0].url.as_deref(), Some(url.as_str()));
        let refused = server_check(&cursor.entries[1]);
        assert_eq!(
            (refused.status, refused.code),
            (Status::Fail, Some(codes::CONFIG_REMOTE_FAILED))
        );
        assert!(
            refused.message.contains("401") && refused.message.contains("KEY_UNKNOWN"),
            "{}",
            refused.message
        );
        assert!(!refused.message.contains(bad.expose()));
        let claude = file(Client::ClaudeCode);
        assert_eq!(server_check(&claude.entries[0]).status, Status::Skip);
        assert!(!report.ok);

        let with_key = doctor_with(
            &home,
            None,
            &DoctorOptions {
                env_key: Some(good.clone()),
                ..DoctorOptions::default()
            },
        )
        .await;
        let claude = with_key
            .files
            .iter()
            .find(|f| f.client == Client::ClaudeCode)
            .unwrap();
        assert_eq!(
            server_check(&claude.entries[0]).status,
            Status::Pass,
            "{claude:#?}"
        );
        server.abort();
    }

    /// A listener that counts the connections it gets (and closes them).
    async fn counting_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(socket);
            }
        });
        (port, count)
    }

    /// A cloned repository's files name hosts anyone chose (an intranet
    /// address, a PostgreSQL server): the doctor reaches none of them, a
    /// server URL nor a site's database, until told the project is trusted
    /// (it had called every URL, ten seconds each, and connected to the
    /// database a project's site named).
    #[tokio::test]
    async fn doctor_reaches_no_host_a_projects_files_name_unless_trusted() {
        let (web, web_hits) = counting_listener().await;
        let (pg, pg_hits) = counting_listener().await;
        let dir = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let home = Home::new(Os::Linux, dir.path().to_path_buf(), |_| None);
        let key = keys::generate().1;
        let site = project.path().join("site");
        write(
            &site.join(crate::site::SITE_FILE),
            &format!("name = \"theirs\"\ndatabase_url = \"postgres://x@127.0.0.1:{pg}/site\"\n"),
        );
        write(
            &project.path().join(".cursor/mcp.json"),
            &json!({"mcpServers": {
                "gatehouse": {"url": format!("http://127.0.0.1:{web}/mcp"),
                              "headers": {"Authorization": format!("Bearer {}", key.expose())}},
                "gatehouse-local": {"command": "gatehouse", "args": ["mcp", "--site", site]},
            }})
            .to_string(),
        );
        let report = doctor(&home, Some(project.path())).await;
        let cursor = report
            .files
            .iter()
            .find(|f| f.client == Client::Cursor && f.scope == Scope::Project)
            .unwrap_or_else(|| panic!("{report:#?}"));
        let check = |entry: usize, name: &str| {
            cursor.entries[entry]
                .checks
                .iter()
                .find(|c| c.name == name)
                .cloned()
                .unwrap_or_else(|| panic!("no {name} check: {cursor:#?}"))
        };
        let server = check(0, "server");
        assert_eq!(server.status, Status::Skip, "{server:?}");
        assert!(server.message.contains("--trust-project"), "{server:?}");
        let site_check = check(1, "site");
        assert_eq!(site_check.status, Status::Skip, "{site_check:?}");
        assert!(
            site_check.message.contains("--trust-project"),
            "{site_check:?}"
        );
        let order = std::sync::atomic::Ordering::SeqCst;
        assert_eq!(web_hits.load(order), 0, "the project's URL was called");
        assert_eq!(
            pg_hits.load(order),
            0,
            "the project's database host was reached"
        );

        let trusted = doctor_with(
            &home,
            Some(project.path()),
            &DoctorOptions {
                trust_project: true,
                ..DoctorOptions::default()
            },
        )
        .await;
        assert!(!trusted.ok);
        assert!(web_hits.load(order) > 0, "trusted: the URL is called");
        assert!(pg_hits.load(order) > 0, "trusted: the database is reached");
    }

    /// A project's file (a cloned repository's `.cursor/mcp.json`) names a
    /// URL anyone could have written: the shell's `GATEHOUSE_API_KEY` is
    /// not sent there (it was: the doctor asked nothing where the clients
    /// ask before they trust a project's servers). A key in an entry's URL
    /// is masked in the report.
    #[tokio::test]
    async fn doctor_never_sends_the_env_key_to_a_project_file_url() {
        let good = keys::generate().1;
        let (url, server) = tiny_server(format!("Bearer {}", good.expose())).await;
        let dir = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let home = Home::new(Os::Linux, dir.path().to_path_buf(), |_| None);
        write(
            &project.path().join(".cursor/mcp.json"),
            &json!({"mcpServers": {
                "gatehouse": {"url": url, "headers": {"Authorization": "Bearer ${env:GATEHOUSE_API_KEY}"}},
                "gatehouse-leaky": {"url": format!("{url}?key={}", good.expose())},
            }})
            .to_string(),
        );
        let report = doctor_with(
            &home,
            Some(project.path()),
            &DoctorOptions {
                env_key: Some(good.clone()),
                ..DoctorOptions::default()
            },
        )
        .await;
        let cursor = report
            .files
            .iter()
            .find(|f| f.client == Client::Cursor && f.scope == Scope::Project)
            .unwrap_or_else(|| panic!("{report:#?}"));
        let entry = &cursor.entries[0];
        let check = |name: &str| entry.checks.iter().find(|c| c.name == name).cloned();
        assert_eq!(check("key").unwrap().status, Status::Skip, "{entry:#?}");
        assert!(
            check("server").is_none_or(|c| c.status == Status::Skip),
            "the shell's key was sent: {entry:#?}"
        );
        let leaky = &cursor.entries[1];
        let shown = leaky.url.as_deref().unwrap();
        assert!(!shown.contains(good.expose()), "{shown}");
        server.abort();
    }
}
