//! `gatehouse config install`: puts the generated entry into the client's own
//! file.
//!
//! Steps, all under an exclusive lock on the file's folder so two installs
//! never interleave: read the file (absent = empty), merge the entry with
//! [`merge::apply`] (which refuses a file it cannot parse and verifies its own
//! edit), diff old against new, and unless it is a dry run: copy the old file to
//! `<file>.gatehouse.bak`, write a temporary file beside it, flush it to disk
//! and rename it over the original. Readers therefore see the old file or the
//! new one, never a torn one. An install that changes nothing writes nothing.
//! A write may name the hash its preview saw ([`InstallRequest::expected_hash`]):
//! the file is then checked under the lock and refused if it changed since.
//!
//! A raw key never goes into a project file (it would be committed): that is
//! refused with a hint to `--secret-ref` or a user/local scope. The diff shown
//! has any raw key replaced by a marker.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::merge::{self, Edit};
use super::paths::{self, Home, Scope, Syntax, Target};
use super::{Client, ConfigActor, ConfigRequest, KeyDelivery, generate};
use crate::error::{Error, Result, codes};

/// What to install, where.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    pub config: ConfigRequest,
    /// `None`: the client's default ([`paths::default_scope`]).
    pub scope: Option<Scope>,
    pub home: Home,
    /// The project folder, for project and local scopes (the CLI passes the
    /// current directory; the desktop app, the folder the admin picked).
    pub project: Option<PathBuf>,
    /// Compute the diff, write nothing.
    pub dry_run: bool,
    /// The [`InstallOutcome::original_hash`] of the previewed dry run: the
    /// write is refused if the file no longer has it, so what is written is
    /// what was shown.
    pub expected_hash: Option<String>,
}

/// What an install did (or, in a dry run, would do).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct InstallOutcome {
    pub client: Client,
    pub client_name: &'static str,
    pub server_name: String,
    pub scope: Scope,
    #[ts(type = "string")]
    pub path: PathBuf,
    /// Whether the file existed before.
    pub existed: bool,
    /// Whether the file's text differs from what it was.
    pub changed: bool,
    /// Whether anything was written (false in a dry run or when unchanged).
    pub written: bool,
    pub dry_run: bool,
    /// A unified diff of the file, any raw key replaced by a marker.
    pub diff: String,
    /// The file as it was read (SHA-256 of its bytes, or `absent`): pass it
    /// back as [`InstallRequest::expected_hash`] to write what was previewed.
    pub original_hash: String,
    /// The copy of the previous file, when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub backup: Option<PathBuf>,
    /// What to do next in the client (restart, approve, trust).
    pub instructions: String,
}

/// The marker a raw key is replaced with in a shown diff.
pub const REDACTED_KEY: &str = "<API key, not shown>";

/// Installs the entry `req.config` describes. See the module doc for the steps.
pub fn install(req: &InstallRequest) -> Result<InstallOutcome> {
    let client = req.config.client;
    let scope = req.scope.unwrap_or_else(|| paths::default_scope(client));
    let config = generate(&req.config)?;
    let project = match (&req.project, scope) {
        (Some(dir), _) => dir.as_path(),
        (None, Scope::User) => req.home.dir.as_path(),
        (None, _) => {
            return Err(Error::invalid(
                codes::CONFIG_PROJECT_REQUIRED,
                format!(
                    "{} scope needs the project folder the file belongs to",
                    scope.as_str()
                ),
                "name the project folder, or use --scope user",
            ));
        }
    };
    let mut target = paths::target(client, scope, &req.home, project, Some(&config.server_name))?;
    target.path = through_symlink(&target.path, scope, project)?;
    let raw_key = match &req.config.actor {
        ConfigActor::ApiKey(KeyDelivery::Inline(key)) => Some(key.expose().to_string()),
        _ => None,
    };
    if raw_key.is_some() && scope == Scope::Project {
        return Err(refuse_key_in_project(client));
    }
    let main = &config.snippets[0];

    let _lock = if req.dry_run {
        None
    } else {
        Some(lock_folder(&target.path)?)
    };
    // Only a regular file is read: opening a FIFO there had hung the
    // install, a dry run too, with the folder's lock held.
    if std::fs::metadata(&target.path).is_ok_and(|m| !m.is_file()) {
        return Err(Error::invalid(
            codes::CONFIG_PATH_INVALID,
            format!("{} is not a regular file", target.path.display()),
            "move it away (a config file is a plain file), then install again",
        ));
    }
    let old = match std::fs::read_to_string(&target.path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("read", &target.path, e)),
    };
    let original_hash = content_hash(old.as_deref());
    if let Some(expected) = &req.expected_hash
        && *expected != original_hash
    {
        return Err(Error::invalid(
            codes::CONFIG_FILE_CHANGED,
            format!("{} changed since the preview", target.path.display()),
            "the file changed since the preview; preview again",
        ));
    }
    let old_text = old.as_deref().unwrap_or("");
    let edits = edits_for(client, &target, &config.server_name, &main.text, old_text)?;
    let new = match target.syntax {
        // A new Continue block file is ours whole, as rendered.
        Syntax::YamlFile if old_text.trim().is_empty() => main.text.clone(),
        _ => {
            merge::apply(target.syntax, old_text, &edits).map_err(|e| with_path(e, &target.path))?
        }
    };
    let changed = old.as_deref() != Some(new.as_str());
    // Every key on the diff's lines: the one written now, and the one an
    // entry held before on the removed lines; and every other credential the
    // file holds on them (another server's token, a database password): the
    // diff is printed and shown in the desktop's page.
    let diff = crate::redact::redact_credentials(&merge::mask_keys(&unified_diff(
        &target.path,
        old_text,
        &new,
    )));
    let mut outcome = InstallOutcome {
        client,
        client_name: client.display_name(),
        server_name: config.server_name.clone(),
        scope,
        path: target.path.clone(),
        existed: old.is_some(),
        changed,
        written: false,
        dry_run: req.dry_run,
        diff,
        original_hash,
        backup: None,
        instructions: main.instructions.clone(),
    };
    if req.dry_run || !changed {
        return Ok(outcome);
    }
    if let Some(old) = &old {
        let backup = sibling(&target.path, ".gatehouse.bak");
        write_atomically(
            &backup,
            old.as_bytes(),
            &target.path,
            raw_key.is_some() || old.contains("gatehouse_sk_"),
        )?;
        outcome.backup = Some(backup);
    }
    write_atomically(
        &target.path,
        new.as_bytes(),
        &target.path,
        raw_key.is_some(),
    )?;
    outcome.written = true;
    Ok(outcome)
}

/// What a preview saw: the SHA-256 of the file's bytes, or `absent`.
fn content_hash(text: Option<&str>) -> String {
    use sha2::Digest;
    match text {
        Some(text) => hex::encode(sha2::Sha256::digest(text.as_bytes())),
        None => "absent".to_string(),
    }
}

/// The edits that put the main snippet's entry (and VS Code's input) into a
/// file of `target`'s shape whose text is `old`.
fn edits_for(
    client: Client,
    target: &Target,
    name: &str,
    text: &str,
    old: &str,
) -> Result<Vec<Edit>> {
    let doc: Value = match target.syntax {
        Syntax::Toml => toml::from_str(text).map_err(|e| super::spec::internal(e.to_string()))?,
        Syntax::Yaml | Syntax::YamlFile => {
            serde_yaml_ng::from_str(text).map_err(|e| super::spec::internal(e.to_string()))?
        }
        Syntax::Json | Syntax::Jsonc => {
            serde_json::from_str(text).map_err(|e| super::spec::internal(e.to_string()))?
        }
    };
    if target.syntax == Syntax::YamlFile {
        return block_edits(client, &doc, name, old);
    }
    let shape = client.shape();
    let entry = shape
        .entry(&doc, name)
        .cloned()
        .ok_or_else(|| super::spec::internal("the generated config lacks its entry".into()))?;
    let mut path = target.servers.clone();
    // Goose keys an extension by its lower-cased name.
    let key = shape
        .entries(&doc)
        .into_iter()
        .map(|(k, _)| k)
        .next()
        .unwrap_or_else(|| name.to_string());
    path.push(key);
    let mut edits = vec![Edit::Set { path, value: entry }];
    if let Some(Value::Array(inputs)) = doc.get("inputs") {
        for item in inputs {
            edits.push(Edit::Upsert {
                path: vec!["inputs".into()],
                key: "id".into(),
                item: item.clone(),
            });
        }
    }
    Ok(edits)
}

/// A Continue block file someone else wrote (or ours, with servers added):
/// our entry is upserted into its `mcpServers` list by name, and the block's
/// own `name`, `version` and `schema` are added only where it has none, so
/// other servers, comments and the admin's block name stay.
fn block_edits(client: Client, doc: &Value, name: &str, old: &str) -> Result<Vec<Edit>> {
    let entry = client
        .shape()
        .entry(doc, name)
        .cloned()
        .ok_or_else(|| super::spec::internal("the generated block lacks its entry".into()))?;
    // A file that does not parse gets every key here; `apply` then refuses it.
    let existing = merge::parse(Syntax::YamlFile, old).unwrap_or_default();
    let mut edits: Vec<Edit> = ["name", "version", "schema"]
        .into_iter()
        .filter(|key| existing.get(key).is_none())
        .map(|key| Edit::Set {
            path: vec![key.to_string()],
            value: doc[key].clone(),
        })
        .collect();
    edits.push(Edit::Upsert {
        path: client
            .shape()
            .servers
            .iter()
            .map(|k| k.to_string())
            .collect(),
        key: "name".into(),
        item: entry,
    });
    Ok(edits)
}

fn refuse_key_in_project(client: Client) -> Error {
    let mut hint = String::from(
        "a project file is usually committed: use --secret-ref so the file holds only a \
         reference, or --scope user",
    );
    if client == Client::ClaudeCode {
        hint.push_str(" or --scope local (kept in ~/.claude.json, out of git)");
    }
    Error::invalid(
        codes::CONFIG_KEY_IN_PROJECT,
        "refusing to write a raw API key into a project file",
        hint,
    )
}

fn with_path(mut err: Error, path: &Path) -> Error {
    if err.code == codes::CONFIG_FILE_UNPARSABLE {
        err.message = format!("{}: {}", path.display(), err.message);
        err = err.detail(serde_json::json!({ "path": path }));
    }
    err
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(
        codes::IO_ERROR,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// `path` with `suffix` added to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// A unified diff of the whole file (`--- a/PATH`, `+++ b/PATH`); an absolute
/// path loses its leading `/` there, as in `git diff`'s prefixes (`a//tmp` read
/// as a typo).
pub fn unified_diff(path: &Path, old: &str, new: &str) -> String {
    let full = path.display().to_string();
    let shown = full.trim_start_matches('/');
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
}

/// Held while a file in the folder is read, merged and replaced.
struct FolderLock {
    _file: File,
}

/// Locks the folder that holds `path` (created if missing). On Unix the folder
/// itself is locked (`flock` on its descriptor), so no lock file is left
/// behind; elsewhere a `.gatehouse.lock` file beside the target is used.
fn lock_folder(path: &Path) -> Result<FolderLock> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
    #[cfg(unix)]
    let file = File::open(dir).map_err(|e| io_error("open", dir, e))?;
    #[cfg(not(unix))]
    let file = {
        let lock = sibling(path, ".gatehouse.lock");
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .map_err(|e| io_error("open", &lock, e))?
    };
    file.lock().map_err(|e| io_error("lock", dir, e))?;
    Ok(FolderLock { _file: file })
}

/// Writes `bytes` to a temporary file in `path`'s folder, flushes it, and
/// renames it over `path`. The new file gets the permissions of `like` (the
/// config file it replaces or backs up: a backup of a private file had been
/// left readable to all), or is private to the user when it holds a key; the
/// temporary file is private from its creation, so no other user can open
/// it while it holds the key.
fn write_atomically(path: &Path, bytes: &[u8], like: &Path, private: bool) -> Result<()> {
    let tmp = sibling(path, &format!(".gatehouse-tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut options = File::options();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(like) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        }
        #[cfg(not(unix))]
        let _ = private;
        rename_over(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        let held = cfg!(windows) && e.kind() == std::io::ErrorKind::PermissionDenied;
        let err = io_error("write", path, e);
        if held {
            err.hint("another program holds the file open (the client app, an editor or a virus scanner): close it and run again; the file is unchanged")
        } else {
            err
        }
    })
}

/// The file a config file's path names: in a project (a cloned repository)
/// a symlink, or a folder linked out of the project, is refused: the write
/// would copy the private file it points at into the repository
/// (`.cursor/mcp.json -> ~/.cursor/mcp.json`), or change a file outside it.
/// Elsewhere (the user's home) a link is the user's own (dotfiles kept elsewhere):
/// the file it points at is the one written, so the link stays.
fn through_symlink(path: &Path, scope: Scope, project: &Path) -> Result<PathBuf> {
    let symlink = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let is_link = symlink(path);
    // Local scope writes the user's own file (Claude Code's `~/.claude.json`).
    if scope == Scope::Project {
        // The deepest folder that is there decides: one not there yet is
        // made inside it. Checked on the file's own folder alone, a link one
        // level up (`.kiro -> elsewhere` for `.kiro/settings/mcp.json`) had
        // the folders made, and the file written, through it.
        let inside = |p: &Path| {
            let Ok(root) = std::fs::canonicalize(project) else {
                return true;
            };
            match p
                .ancestors()
                .find(|a| a.exists())
                .map(std::fs::canonicalize)
            {
                Some(Ok(there)) => there.starts_with(root),
                _ => true,
            }
        };
        // And no folder of the project on the way is a link, even one that
        // points at nothing yet.
        let linked = path.parent().is_some_and(|folder| {
            folder.starts_with(project)
                && folder
                    .ancestors()
                    .take_while(|a| *a != project)
                    .any(symlink)
        });
        let folder_inside = path.parent().is_none_or(inside);
        if is_link || linked || !folder_inside {
            return Err(Error::invalid(
                codes::CONFIG_PATH_INVALID,
                format!(
                    "{} is a symbolic link, or in a folder linked out of the project",
                    path.display()
                ),
                "a project's config file must be a file of the project: remove the link, or install with --scope user",
            ));
        }
        return Ok(path.to_path_buf());
    }
    if !is_link {
        return Ok(path.to_path_buf());
    }
    std::fs::canonicalize(path).map_err(|e| {
        io_error("resolve", path, e)
            .hint("the link points at nothing: remove it, or create the file it names")
    })
}

/// How long a replace waits for a program that holds the file open.
const HELD_OPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Renames `tmp` over `path`. Where Windows cannot replace a file another
/// program holds open (no POSIX rename semantics: older Windows, FAT, Wine),
/// the rename is refused until that program lets go: editors and scanners
/// hold a file briefly, so it is retried for [`HELD_OPEN_WAIT`].
fn rename_over(tmp: &Path, path: &Path) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + HELD_OPEN_WAIT;
    loop {
        match std::fs::rename(tmp, path) {
            Err(e)
                if cfg!(windows)
                    && e.kind() == std::io::ErrorKind::PermissionDenied
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Replacing and locking, on every system: Windows runs these under Wine
/// (scripts/wine-test.sh), where a rename over a file another process holds
/// open and the lock file beside the config are Windows' own semantics.
#[cfg(test)]
mod replace_tests {
    use super::*;
    use std::io::Read as _;
    use std::sync::mpsc;
    use std::time::Duration;

    fn names(folder: &Path) -> Vec<String> {
        std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// A client that holds its config file open while the replace runs and
    /// lets go soon after (an editor, a scanner) does not stop it: the new
    /// text lands whole and no temporary file stays.
    #[test]
    fn a_config_file_held_open_briefly_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("Application Support Zoë");
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("claude_desktop_config.json");
        std::fs::write(&path, b"{\"old\": true}").unwrap();
        let held = File::open(&path).unwrap();
        let reader = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        write_atomically(&path, b"{\"new\": true}", &path, true).unwrap();
        reader.join().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"new\": true}");
        assert_eq!(names(&folder), ["claude_desktop_config.json"]);
    }

    /// A file held open for good: Unix (and Windows with POSIX rename
    /// semantics) replace it under the reader, who keeps the old text;
    /// where Windows refuses, the error says why and the file is unchanged.
    /// Either way the file is whole and no temporary file stays.
    #[test]
    fn a_config_file_held_open_is_replaced_or_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, b"{\"old\": true}").unwrap();
        let mut held = File::open(&path).unwrap();
        match write_atomically(&path, b"{\"new\": true}", &path, false) {
            Ok(()) => {
                assert_eq!(std::fs::read(&path).unwrap(), b"{\"new\": true}");
                let mut old = String::new();
                held.read_to_string(&mut old).unwrap();
                assert_eq!(
                    old, "{\"old\": true}",
                    "the open handle reads what it opened"
                );
            }
            // Only Windows refuses.
            Err(e) if cfg!(windows) => {
                assert_eq!(e.code, codes::IO_ERROR);
                assert!(
                    e.hint.as_deref().unwrap().contains("holds the file open"),
                    "{e:?}"
                );
                assert_eq!(std::fs::read(&path).unwrap(), b"{\"old\": true}");
            }
            Err(e) => panic!("refused on a system whose rename replaces an open file: {e:?}"),
        }
        drop(held);
        assert_eq!(names(dir.path()), ["config.json"]);
    }

    /// A second writer of the same folder waits until the first is done.
    #[test]
    fn the_folder_lock_holds_off_a_second_writer_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("with space").join("config.json");
        let first = lock_folder(&path).unwrap();
        let (tx, rx) = mpsc::channel();
        let second_path = path.clone();
        let second = std::thread::spawn(move || {
            let lock = lock_folder(&second_path).unwrap();
            tx.send(()).unwrap();
            drop(lock);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second writer got the lock while the first held it"
        );
        drop(first);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the second writer gets the lock once the first lets go");
        second.join().unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_config::{ConfigActor, Os};

    fn request(home: &Path, site: &Path, client: Client, dry_run: bool) -> InstallRequest {
        InstallRequest {
            config: ConfigRequest {
                client,
                binary: std::env::current_exe().unwrap(),
                site_dir: site.to_path_buf(),
                server_name: None,
                actor: ConfigActor::Public,
                url: None,
            },
            scope: None,
            home: Home::new(Os::Linux, home.to_path_buf(), |_| None),
            project: None,
            dry_run,
            expected_hash: None,
        }
    }

    #[test]
    fn install_writes_once_keeps_a_backup_and_refuses_what_it_cannot_parse() {
        let home = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        let file = home.path().join(".codex/config.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let old = "# mine\nmodel = \"o3\"\n";
        std::fs::write(&file, old).unwrap();

        let dry = install(&request(home.path(), site.path(), Client::Codex, true)).unwrap();
        assert!(dry.changed && !dry.written && dry.diff.contains("+[mcp_servers.gatehouse]"));
        let shown = file.display().to_string();
        let header = format!("--- a/{}\n", shown.trim_start_matches('/'));
        assert!(dry.diff.starts_with(&header), "{}", dry.diff);
        assert!(!dry.diff.contains("a//") && !dry.diff.contains("b//"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), old);

        let done = install(&request(home.path(), site.path(), Client::Codex, false)).unwrap();
        assert!(done.written);
        let backup = done.backup.unwrap();
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), old);
        let new = std::fs::read_to_string(&file).unwrap();
        assert!(new.starts_with(old), "{new}");

        let again = install(&request(home.path(), site.path(), Client::Codex, false)).unwrap();
        assert!(!again.changed && !again.written && again.diff.is_empty());

        std::fs::write(&file, "model = \n").unwrap();
        let err = install(&request(home.path(), site.path(), Client::Codex, false)).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_FILE_UNPARSABLE);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "model = \n");
        let mut names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["config.toml", "config.toml.gatehouse.bak"]);
    }

    /// The desktop app previews, then writes: a file changed in between is
    /// refused under the lock, and left as the other writer made it.
    #[test]
    fn a_write_after_a_preview_refuses_a_file_changed_since() {
        let home = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        let file = home.path().join(".cursor/mcp.json");
        let write_after = |preview: &InstallOutcome| InstallRequest {
            expected_hash: Some(preview.original_hash.clone()),
            ..request(home.path(), site.path(), Client::Cursor, false)
        };

        // Absent at the preview, created by someone else before the write.
        let preview = install(&request(home.path(), site.path(), Client::Cursor, true)).unwrap();
        assert_eq!(preview.original_hash, "absent");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let theirs = "{\"mcpServers\": {\"other\": {\"command\": \"/x\"}}}\n";
        std::fs::write(&file, theirs).unwrap();
        let err = install(&write_after(&preview)).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_FILE_CHANGED);
        assert!(err.hint.unwrap().contains("preview again"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);

        // Previewed as it is now: the write goes through.
        let preview = install(&request(home.path(), site.path(), Client::Cursor, true)).unwrap();
        let done = install(&write_after(&preview)).unwrap();
        assert!(done.written);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["other"]["command"], "/x");
        assert!(doc["mcpServers"]["gatehouse"].is_object());

        // The same preview again is stale: the file is not what it showed.
        let err = install(&write_after(&preview)).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_FILE_CHANGED);
    }

    /// A Continue block file the admin already keeps other servers in: ours is
    /// merged into its list, never written over it.
    #[test]
    fn continue_install_merges_into_an_existing_block_file() {
        let project = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        let file = project.path().join(".continue/mcpServers/gatehouse.yaml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let old = "# Team servers, reviewed quarterly\nname: Team servers\nversion: 1.2.0\nschema: v1\nmcpServers:\n  # the docs search\n  - name: docs\n    type: stdio\n    command: /usr/bin/docs # pinned\n    args: []\n";
        std::fs::write(&file, old).unwrap();
        let mut req = request(project.path(), site.path(), Client::Continue, false);
        req.project = Some(project.path().to_path_buf());

        let done = install(&req).unwrap();
        assert!(done.written, "{done:?}");
        let new = std::fs::read_to_string(&file).unwrap();
        assert!(new.ends_with("type: stdio\n"), "{new}");
        for kept in [
            "# Team servers, reviewed quarterly",
            "# the docs search",
            "# pinned",
            "name: Team servers",
        ] {
            assert!(new.contains(kept), "{kept:?} lost:\n{new}");
        }
        let doc: Value = serde_yaml_ng::from_str(&new).unwrap();
        let servers = doc["mcpServers"].as_array().unwrap();
        assert_eq!(servers.len(), 2, "{new}");
        assert_eq!(servers[0]["command"], "/usr/bin/docs");
        assert_eq!(servers[1]["name"], "gatehouse");
        assert_eq!(servers[1]["type"], "stdio");
        assert_eq!(doc["version"], "1.2.0");
        assert_eq!(std::fs::read_to_string(done.backup.unwrap()).unwrap(), old);
        let again = install(&req).unwrap();
        assert!(!again.changed, "{}", again.diff);

        // A list we cannot merge into is refused, and the file left as it was.
        let odd =
            "name: x\nversion: 0.0.1\nschema: v1\nmcpServers:\n  docs: {command: /usr/bin/docs}\n";
        std::fs::write(&file, odd).unwrap();
        let err = install(&req).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_FILE_UNPARSABLE, "{err:?}");
        assert!(err.message.contains("not a list"), "{}", err.message);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), odd);
    }

    #[test]
    fn project_scope_needs_a_project_folder() {
        let home = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        let err = install(&request(home.path(), site.path(), Client::Opencode, true)).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_PROJECT_REQUIRED);
    }
}
