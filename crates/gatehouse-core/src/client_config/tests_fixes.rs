//! Regression tests for the local forms' fixes, each named after what it
//! pins, and the per-system paths (any system's layout, tested anywhere
//! through an injected [`Home`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::install::{InstallRequest, install};
use super::paths::{Home, Os, Scope, target};
use super::*;

fn home_at(os: Os, dir: &Path, vars: &[(&str, &str)]) -> Home {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Home::new(os, dir.to_path_buf(), move |k| vars.get(k).cloned())
}

fn user_file(client: Client, home: &Home) -> PathBuf {
    target(client, Scope::User, home, Path::new("/p"), None)
        .unwrap()
        .path
}

fn config(client: Client, actor: ConfigActor) -> ConfigRequest {
    ConfigRequest {
        client,
        binary: std::env::current_exe().unwrap(),
        site_dir: std::env::temp_dir(),
        server_name: None,
        actor,
        url: None,
    }
}

fn install_into(project: &Path, home: &Path, client: Client) -> PathBuf {
    install(&InstallRequest {
        config: config(client, ConfigActor::ApiKey(KeyDelivery::Reference)),
        scope: Some(Scope::Project),
        home: home_at(Os::Linux, home, &[]),
        project: Some(project.to_path_buf()),
        dry_run: false,
        expected_hash: None,
    })
    .unwrap()
    .path
}

/// Installing Copilot CLI's project entry used to rewrite `.mcp.json`'s
/// `mcpServers.gatehouse`, replacing Claude Code's `type: "stdio"` entry with
/// Copilot's `type: "local"` + `tools` one. Copilot's project file is now
/// `.github/mcp.json`, and `.mcp.json` keeps Claude Code's entry.
#[test]
fn copilot_project_install_leaves_claude_codes_mcp_json_entry() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let claude = install_into(project.path(), home.path(), Client::ClaudeCode);
    let before = std::fs::read_to_string(&claude).unwrap();
    let copilot = install_into(project.path(), home.path(), Client::Copilot);
    assert_ne!(copilot, claude, "Copilot must not share Claude Code's file");
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), before);
    let entry: Value = serde_json::from_str(&before).unwrap();
    assert_eq!(entry["mcpServers"]["gatehouse"]["type"], "stdio");
    let theirs: Value = serde_json::from_str(&std::fs::read_to_string(&copilot).unwrap()).unwrap();
    assert_eq!(theirs["mcpServers"]["gatehouse"]["type"], "local");
    assert_eq!(
        theirs["mcpServers"]["gatehouse"]["env"][API_KEY_ENV],
        "${GATEHOUSE_API_KEY}"
    );
    assert!(copilot.ends_with(Path::new(".github").join("mcp.json")));
}

/// LM Studio's home is the folder named in `~/.lmstudio-home-pointer`, else
/// `~/.cache/lm-studio` when it exists, else `~/.lmstudio` (lmstudio-js
/// `findLMStudioHome`); it used to be `~/.lmstudio` always.
#[test]
fn lm_studio_home_follows_the_pointer_then_the_cache_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_at(Os::Linux, dir.path(), &[]);
    assert_eq!(
        user_file(Client::LmStudio, &home),
        dir.path().join(".lmstudio").join("mcp.json")
    );
    let cache = dir.path().join(".cache").join("lm-studio");
    std::fs::create_dir_all(&cache).unwrap();
    assert_eq!(user_file(Client::LmStudio, &home), cache.join("mcp.json"));
    let elsewhere = dir.path().join("models disk").join("lmstudio");
    std::fs::write(
        dir.path().join(".lmstudio-home-pointer"),
        format!("{}\n", elsewhere.display()),
    )
    .unwrap();
    assert_eq!(
        user_file(Client::LmStudio, &home),
        elsewhere.join("mcp.json")
    );
}

/// `GEMINI_CLI_HOME` replaces the home directory Gemini CLI keeps `.gemini` in.
#[test]
fn gemini_cli_home_moves_the_user_settings() {
    let home = home_at(Os::Linux, Path::new("/h"), &[("GEMINI_CLI_HOME", "/g")]);
    assert_eq!(
        user_file(Client::Gemini, &home),
        Path::new("/g/.gemini/settings.json")
    );
    let plain = home_at(Os::Linux, Path::new("/h"), &[]);
    assert_eq!(
        user_file(Client::Gemini, &plain),
        Path::new("/h/.gemini/settings.json")
    );
}

/// `CONTINUE_GLOBAL_DIR` replaces `~/.continue` for the global block files.
#[test]
fn continue_global_dir_moves_the_user_block_files() {
    let home = home_at(Os::Linux, Path::new("/h"), &[("CONTINUE_GLOBAL_DIR", "/c")]);
    assert_eq!(
        user_file(Client::Continue, &home),
        Path::new("/c/mcpServers/gatehouse.yaml")
    );
    let read = paths::read_targets(Client::Continue, &home, Path::new("/p"));
    assert!(read.iter().any(|t| t.path == Path::new("/c/config.yaml")));
    assert!(!read.iter().any(|t| t.path.starts_with("/h/.continue")));
}

/// Zed reads `~/.config/zed` on macOS whatever `XDG_CONFIG_HOME` says; only
/// Linux follows the variable.
#[test]
fn zed_on_macos_ignores_xdg_config_home() {
    let vars = [("XDG_CONFIG_HOME", "/x")];
    let mac = home_at(Os::Macos, Path::new("/h"), &vars);
    assert_eq!(
        user_file(Client::Zed, &mac),
        Path::new("/h/.config/zed/settings.json")
    );
    let linux = home_at(Os::Linux, Path::new("/h"), &vars);
    assert_eq!(
        user_file(Client::Zed, &linux),
        Path::new("/x/zed/settings.json")
    );
}

/// Only Cline's VS Code extension expands `${env:...}`; the Cline CLI passes
/// the text through, so the reference form says it is for the extension.
#[test]
fn cline_secret_ref_is_labelled_vscode_extension_only() {
    let out = generate(&config(
        Client::Cline,
        ConfigActor::ApiKey(KeyDelivery::Reference),
    ))
    .unwrap();
    let text = &out.snippets[0].instructions;
    assert!(text.contains("VS Code extension only"), "{text}");
    assert!(text.contains("Cline CLI passes the text through"), "{text}");
}

/// Under the MSIX install, Settings → Developer → Edit Config does not open
/// the file the app reads, so the instructions no longer say it does.
#[test]
fn claude_desktop_instructions_do_not_claim_edit_config_opens_the_read_file() {
    let out = generate(&config(Client::ClaudeDesktop, ConfigActor::Public)).unwrap();
    let text = &out.snippets[0].instructions;
    assert!(
        !text.contains("opens the file this install reads"),
        "{text}"
    );
    assert!(
        text.contains("gatehouse config install claude-desktop"),
        "{text}"
    );
}

/// Roo Code is archived: its output says so and names the fork, which has its
/// own files (`.zoo/mcp.json`, its own globalStorage folder).
#[test]
fn roo_code_says_it_is_archived_and_zoo_code_has_its_own_paths() {
    let roo = generate(&config(Client::RooCode, ConfigActor::Public)).unwrap();
    let text = &roo.snippets[0].instructions;
    assert!(
        text.contains("archived") && text.contains("zoo-code"),
        "{text}"
    );
    let zoo: Client = "zoo-code".parse().unwrap();
    let home = home_at(Os::Linux, Path::new("/h"), &[]);
    assert_eq!(
        target(zoo, Scope::Project, &home, Path::new("/p"), None)
            .unwrap()
            .path,
        Path::new("/p/.zoo/mcp.json")
    );
    assert_eq!(
        user_file(zoo, &home),
        Path::new(
            "/h/.config/Code/User/globalStorage/zoocodeorganization.zoo-code/settings/mcp_settings.json"
        )
    );
    let zoo_out = generate(&config(zoo, ConfigActor::ApiKey(KeyDelivery::Reference))).unwrap();
    let doc: Value = serde_json::from_str(&zoo_out.snippets[0].text).unwrap();
    assert_eq!(
        doc["mcpServers"]["gatehouse"]["env"][API_KEY_ENV],
        "${env:GATEHOUSE_API_KEY}"
    );
    // The legacy project file the fork still reads is checked by the doctor.
    let read = paths::read_targets(zoo, &home, Path::new("/p"));
    assert!(read.iter().any(|t| t.path == Path::new("/p/.roo/mcp.json")));
}

/// Every client's user file on Windows lies under the profile or `%APPDATA%`
/// and is built from separate components (so Windows gets `\` throughout).
#[test]
fn every_user_file_on_windows_is_under_the_profile_or_appdata() {
    let profile = PathBuf::from(r"C:\Users\ana");
    let appdata = PathBuf::from(r"C:\Users\ana\AppData\Roaming");
    let home = home_at(
        Os::Windows,
        &profile,
        &[("APPDATA", appdata.to_str().unwrap())],
    );
    let expect = |client: Client, parts: &[&str], base: &Path| {
        assert_eq!(
            user_file(client, &home),
            paths::join(base, parts),
            "{client}"
        );
    };
    expect(Client::VsCode, &["Code", "User", "mcp.json"], &appdata);
    expect(Client::Zed, &["Zed", "settings.json"], &appdata);
    expect(
        Client::Goose,
        &["Block", "goose", "config", "config.yaml"],
        &appdata,
    );
    expect(Client::Codex, &[".codex", "config.toml"], &profile);
    expect(Client::Cursor, &[".cursor", "mcp.json"], &profile);
    expect(Client::Gemini, &[".gemini", "settings.json"], &profile);
    expect(
        Client::Windsurf,
        &[".codeium", "windsurf", "mcp_config.json"],
        &profile,
    );
    expect(Client::Kiro, &[".kiro", "settings", "mcp.json"], &profile);
    expect(Client::ClaudeCode, &[".claude.json"], &profile);
    expect(Client::Copilot, &[".copilot", "mcp-config.json"], &profile);
    expect(
        Client::Cline,
        &[".cline", "data", "settings", "cline_mcp_settings.json"],
        &profile,
    );
    expect(Client::LmStudio, &[".lmstudio", "mcp.json"], &profile);
    expect(
        Client::RooCode,
        &[
            "Code",
            "User",
            "globalStorage",
            "rooveterinaryinc.roo-cline",
            "settings",
            "mcp_settings.json",
        ],
        &appdata,
    );
    expect(
        Client::ClaudeDesktop,
        &["Claude", "claude_desktop_config.json"],
        &appdata,
    );
    for client in Client::ALL {
        if let Ok(t) = target(client, Scope::User, &home, Path::new(r"C:\p"), None) {
            assert!(
                t.path.starts_with(&profile) || t.path.starts_with(&appdata),
                "{client}: {}",
                t.path.display()
            );
        }
    }
}

/// On Windows, a config names `C:\...` paths exactly: each format's own
/// escaping round-trips through its parser (the validator compares the parsed
/// value with the path), for every client and actor kind.
#[cfg(windows)]
#[test]
fn windows_paths_render_exactly_in_every_format() {
    let binary = PathBuf::from(r"C:\Program Files\Gatehouse\gatehouse.exe");
    let site = PathBuf::from(r"C:\Users\ana\My Sites\blog's");
    for client in Client::ALL {
        for actor in [
            ConfigActor::Public,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ] {
            let request = ConfigRequest {
                client,
                binary: binary.clone(),
                site_dir: site.clone(),
                server_name: None,
                actor,
                url: None,
            };
            match generate(&request) {
                Ok(out) => assert!(!out.snippets.is_empty()),
                Err(e) => assert_eq!(e.code, codes::CONFIG_SECRET_REF_UNSUPPORTED, "{client}"),
            }
        }
    }
}

fn install_as(
    client: Client,
    scope: Scope,
    home: &Path,
    project: &Path,
    delivery: KeyDelivery,
) -> crate::Result<super::install::InstallOutcome> {
    install(&InstallRequest {
        config: config(client, ConfigActor::ApiKey(delivery)),
        scope: Some(scope),
        home: home_at(Os::Linux, home, &[]),
        project: Some(project.to_path_buf()),
        dry_run: false,
        expected_hash: None,
    })
}

/// The backup of a config file is as private as the file: a 0600 file
/// holding another server's token had its backup written 0644.
#[cfg(unix)]
#[test]
fn backup_keeps_the_original_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let file = user_file(Client::Cursor, &home_at(Os::Linux, home.path(), &[]));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        r#"{"mcpServers": {"github": {"env": {"GITHUB_TOKEN": "ghp_x"}}}}"#,
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = install_as(
        Client::Cursor,
        Scope::User,
        home.path(),
        home.path(),
        KeyDelivery::Reference,
    )
    .unwrap();
    let backup = out.backup.expect("a backup");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&backup), 0o600);
    assert_eq!(mode(&file), 0o600);
}

/// Replacing an entry's key shows neither key in the diff: the old one, on
/// the removed line, had been printed in clear.
#[test]
fn reinstall_diff_masks_the_replaced_key() {
    let home = tempfile::tempdir().unwrap();
    let (old, new) = (
        crate::access::keys::generate().1,
        crate::access::keys::generate().1,
    );
    for (key, client) in [(&old, Client::Zed), (&new, Client::Zed)] {
        let out = install_as(
            client,
            Scope::User,
            home.path(),
            home.path(),
            KeyDelivery::Inline(key.clone()),
        )
        .unwrap();
        for k in [&old, &new] {
            assert!(!out.diff.contains(k.expose()), "{}", out.diff);
        }
    }
}

/// The diff shows lines of the user's file beside the entry: another
/// server's token and the old entry's database password had been printed
/// (and shown in the desktop's page) in clear.
#[test]
fn an_install_diff_shows_no_credential_of_the_file() {
    let home = tempfile::tempdir().unwrap();
    let file = user_file(Client::Cursor, &home_at(Os::Linux, home.path(), &[]));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        serde_json::json!({"mcpServers": {
            "github": {"command": "x", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_REALTOKEN123456"}},
            "gatehouse": {"command": "old", "env": {
                "PGPASSWORD": "pgsecretpw",
                "GATEHOUSE_DATABASE_URL": "postgres://u:dbpw123@h/db",
                "GATEHOUSE_API_KEY": "hunter2hunter2"}},
        }})
        .to_string(),
    )
    .unwrap();
    let out = install_as(
        Client::Cursor,
        Scope::User,
        home.path(),
        home.path(),
        KeyDelivery::Reference,
    )
    .unwrap();
    assert!(out.diff.contains("PGPASSWORD"), "{}", out.diff);
    for secret in [
        "ghp_REALTOKEN123456",
        "pgsecretpw",
        "dbpw123",
        "hunter2hunter2",
    ] {
        assert!(!out.diff.contains(secret), "{secret} in {}", out.diff);
    }
}

/// A config file that is a FIFO (or any other non-regular file) is refused
/// at once: reading it had hung the install, a dry run too.
#[cfg(unix)]
#[test]
fn install_refuses_a_config_path_that_is_not_a_regular_file() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let fifo = project.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = install_as(
        Client::Cursor,
        Scope::Project,
        home.path(),
        project.path(),
        KeyDelivery::Reference,
    )
    .unwrap_err();
    assert_eq!(e.code, codes::CONFIG_PATH_INVALID, "{e:?}");
}

/// A project's config file that is a symbolic link (a cloned repository's
/// `.cursor/mcp.json -> ~/.cursor/mcp.json`), or sits in a folder linked out
/// of the project, is refused: the private file it points at had been
/// copied into the repository with the entry added. In the user's home a
/// link is the user's own: the file it points at is written, the link kept.
#[cfg(unix)]
#[test]
fn project_install_refuses_a_symlinked_config_file() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let private = home.path().join("private.json");
    let secret = r#"{"mcpServers": {"github": {"env": {"GITHUB_TOKEN": "ghp_SECRET"}}}}"#;
    std::fs::write(&private, secret).unwrap();
    let linked = project.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(linked.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&private, &linked).unwrap();
    let e = install_as(
        Client::Cursor,
        Scope::Project,
        home.path(),
        project.path(),
        KeyDelivery::Reference,
    )
    .unwrap_err();
    assert_eq!(e.code, codes::CONFIG_PATH_INVALID, "{e:?}");
    assert!(
        std::fs::symlink_metadata(&linked)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&private).unwrap(), secret);

    // A folder linked out of the project.
    let elsewhere = tempfile::tempdir().unwrap();
    let project2 = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project2.path().join(".cursor")).unwrap();
    let e = install_as(
        Client::Cursor,
        Scope::Project,
        home.path(),
        project2.path(),
        KeyDelivery::Reference,
    )
    .unwrap_err();
    assert_eq!(e.code, codes::CONFIG_PATH_INVALID, "{e:?}");
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none()
    );

    // A link further up, whose folders below are not there yet (Kiro's
    // `.kiro/settings/mcp.json` with `.kiro` linked out, Continue's
    // `.continue/mcpServers/` with `.continue` linked to the user's own):
    // the folders had been made, and the file written, through the link.
    for (client, top) in [(Client::Kiro, ".kiro"), (Client::Continue, ".continue")] {
        let elsewhere = tempfile::tempdir().unwrap();
        let project3 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), project3.path().join(top)).unwrap();
        let e = install_as(
            client,
            Scope::Project,
            home.path(),
            project3.path(),
            KeyDelivery::Reference,
        )
        .unwrap_err();
        assert_eq!(e.code, codes::CONFIG_PATH_INVALID, "{client:?}: {e:?}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none(),
            "{client:?} wrote through the link"
        );
        // Even a link that points at nothing yet.
        let project4 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("later"), project4.path().join(top))
            .unwrap();
        let e = install_as(
            client,
            Scope::Project,
            home.path(),
            project4.path(),
            KeyDelivery::Reference,
        )
        .unwrap_err();
        assert_eq!(e.code, codes::CONFIG_PATH_INVALID, "{client:?}: {e:?}");
        assert!(!elsewhere.path().join("later").exists());
    }

    // The user's own link (dotfiles): written through, kept a link.
    let user = user_file(Client::Cursor, &home_at(Os::Linux, home.path(), &[]));
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let dotfile = home.path().join("dotfiles-cursor.json");
    std::fs::write(&dotfile, "{}").unwrap();
    std::os::unix::fs::symlink(&dotfile, &user).unwrap();
    let out = install_as(
        Client::Cursor,
        Scope::User,
        home.path(),
        home.path(),
        KeyDelivery::Reference,
    )
    .unwrap();
    assert_eq!(out.path, dotfile.canonicalize().unwrap());
    assert!(
        std::fs::symlink_metadata(&user)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&dotfile)
            .unwrap()
            .contains("gatehouse")
    );
}
