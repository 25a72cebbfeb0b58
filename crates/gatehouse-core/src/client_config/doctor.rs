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
//! from here: its check is `skip` with the reason. The result is plain data for
//! the CLI's table and `--json`, and for the desktop app.
//!
//! # Caveats
//! The actor check verifies a key as the server does, which records it as used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::paths::{self, Home, Scope};
use super::validate::EntryView;
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
    pub command: String,
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

/// Examines every client file under `home` and, when given, in `project`.
pub async fn doctor(home: &Home, project: Option<&Path>) -> DoctorReport {
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
            files.push(examine(client, &target, &mut sites).await);
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
        let Ok(view) = shape.view(entry) else {
            continue;
        };
        if !is_gatehouse(&view) {
            continue;
        }
        let mut entry = check_entry(name, view, sites).await;
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

async fn check_entry(
    name: String,
    view: EntryView,
    sites: &mut BTreeMap<PathBuf, std::result::Result<Site, Error>>,
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
        Some(dir) => {
            let opened = match sites.get(dir) {
                Some(known) => match known {
                    Ok(site) => Ok(site.clone()),
                    Err(e) => Err(clone_error(e)),
                },
                None => {
                    let result = open_site(dir).await;
                    let copy = result.as_ref().map(Clone::clone).map_err(clone_error);
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
        site: site_dir,
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

fn clone_error(e: &Error) -> Error {
    Error {
        code: e.code,
        message: e.message.clone(),
        hint: e.hint.clone(),
        detail: e.detail.clone(),
    }
}

async fn open_site(dir: &Path) -> std::result::Result<Site, Error> {
    // Reading gatehouse.toml first keeps a missing site from creating a database.
    site::read_site_file(dir)?;
    site::open(&Settings {
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
}
