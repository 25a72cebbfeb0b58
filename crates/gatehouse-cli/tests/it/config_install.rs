//! `gatehouse config install` through the real binary, on fixture config files
//! under a fixture `HOME`: other entries, comments and formatting kept, a
//! second install idempotent, a file that does not parse refused and left
//! byte for byte as it was, the backup present, a raw key never in the diff,
//! and concurrent installs never leaving a torn or half-merged file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::config::{entry_in, parse_doc, program_and_args};
use crate::util::{BIN, TestSite, failure};

/// Every variable a client's path depends on: removed so only `HOME` counts.
const PATH_VARS: [&str; 10] = [
    "GEMINI_CLI_HOME",
    "CONTINUE_GLOBAL_DIR",
    "XDG_CONFIG_HOME",
    "APPDATA",
    "LOCALAPPDATA",
    "CODEX_HOME",
    "COPILOT_HOME",
    "CLINE_MCP_SETTINGS_PATH",
    "CLINE_DATA_DIR",
    "CLINE_DIR",
];

/// A `gatehouse` command for `site` whose user files live under `home`.
pub fn in_home(site: &TestSite, home: &Path) -> Command {
    let mut cmd = site.command();
    cmd.env("HOME", home).current_dir(home);
    for var in PATH_VARS {
        cmd.env_remove(var);
    }
    cmd
}

pub fn run_in(site: &TestSite, home: &Path, args: &[&str]) -> Output {
    in_home(site, home)
        .args(args)
        .output()
        .expect("gatehouse runs")
}

fn ok_in(site: &TestSite, home: &Path, args: &[&str]) -> (String, String) {
    let out = run_in(site, home, args);
    assert!(
        out.status.success(),
        "gatehouse {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".gatehouse.bak");
    path.with_file_name(name)
}

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

struct Fixture {
    client: &'static str,
    /// Under HOME.
    file: &'static str,
    format: &'static str,
    text: &'static str,
    /// Comments and lines that must survive.
    kept: &'static [&'static str],
    /// `(path from the root, value)` that must be equal after the install.
    other: &'static [(&'static [&'static str], &'static str)],
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        client: "cursor",
        file: ".cursor/mcp.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"/usr/bin/other\",\n      \"args\": [\"--flag\"]\n    }\n  },\n  \"someSetting\": true\n}\n",
        kept: &["\"someSetting\": true", "\"args\": [\"--flag\"]"],
        other: &[(&["mcpServers", "other", "command"], "/usr/bin/other")],
    },
    Fixture {
        client: "vscode",
        file: ".config/Code/User/mcp.json",
        format: "jsonc",
        text: "// My MCP servers\n{\n  \"inputs\": [\n    { \"id\": \"other-token\", \"type\": \"promptString\", \"password\": true }, // keep\n  ],\n  \"servers\": {\n    /* the linter */\n    \"other\": { \"type\": \"stdio\", \"command\": \"/usr/bin/other\" },\n  },\n}\n",
        kept: &["// My MCP servers", "/* the linter */", "// keep"],
        other: &[
            (&["servers", "other", "command"], "/usr/bin/other"),
            (&["inputs", "0", "id"], "other-token"),
        ],
    },
    Fixture {
        client: "zed",
        file: ".config/zed/settings.json",
        format: "jsonc",
        text: "// Zed settings\n{\n  \"theme\": \"One Dark\", // my theme\n  \"context_servers\": {\n    \"other\": { \"command\": \"/usr/bin/other\", \"args\": [] },\n  },\n}\n",
        kept: &["// Zed settings", "// my theme", "\"theme\": \"One Dark\""],
        other: &[
            (&["theme"], "One Dark"),
            (&["context_servers", "other", "command"], "/usr/bin/other"),
        ],
    },
    Fixture {
        client: "gemini",
        file: ".gemini/settings.json",
        format: "jsonc",
        text: "{\n  // Gemini CLI\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {}\n}\n",
        kept: &["// Gemini CLI", "\"theme\": \"GitHub\""],
        other: &[(&["theme"], "GitHub")],
    },
    Fixture {
        client: "codex",
        file: ".codex/config.toml",
        format: "toml",
        text: "# Codex settings\nmodel = \"o3\" # favourite\n\n[mcp_servers.other]\ncommand = \"/usr/bin/other\" # keep me\nargs = []\n",
        kept: &["# Codex settings", "# favourite", "# keep me"],
        other: &[
            (&["model"], "o3"),
            (&["mcp_servers", "other", "command"], "/usr/bin/other"),
        ],
    },
    Fixture {
        client: "goose",
        file: ".config/goose/config.yaml",
        format: "yaml",
        text: "# goose config\nGOOSE_PROVIDER: openai # provider\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n    name: developer\n",
        kept: &["# goose config", "# provider", "GOOSE_PROVIDER: openai"],
        other: &[
            (&["GOOSE_PROVIDER"], "openai"),
            (&["extensions", "developer", "type"], "builtin"),
        ],
    },
    Fixture {
        client: "opencode",
        // Project scope (its default): the current directory, HOME here.
        file: "opencode.json",
        format: "jsonc",
        text: "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // my servers\n  \"mcp\": {\n    \"other\": { \"type\": \"local\", \"command\": [\"/usr/bin/other\", \"--flag\"], \"enabled\": true }, // keep me\n  },\n}\n",
        kept: &["// my servers", "// keep me"],
        other: &[
            (&["$schema"], "https://opencode.ai/config.json"),
            (&["mcp", "other", "command", "0"], "/usr/bin/other"),
        ],
    },
    Fixture {
        client: "cline",
        file: ".cline/data/settings/cline_mcp_settings.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"/usr/bin/other\",\n      \"args\": [],\n      \"disabled\": false,\n      \"autoApprove\": [\"search\"]\n    }\n  }\n}\n",
        kept: &["\"autoApprove\": [\"search\"]"],
        other: &[
            (&["mcpServers", "other", "command"], "/usr/bin/other"),
            (&["mcpServers", "other", "autoApprove", "0"], "search"),
        ],
    },
    Fixture {
        client: "roo-code",
        // Project scope (its default).
        file: ".roo/mcp.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n      \"command\": \"/usr/bin/other\",\n      \"alwaysAllow\": [\"read\"]\n    }\n  }\n}\n",
        kept: &["\"alwaysAllow\": [\"read\"]"],
        other: &[(&["mcpServers", "other", "command"], "/usr/bin/other")],
    },
    Fixture {
        client: "copilot",
        file: ".copilot/mcp-config.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"local\",\n      \"command\": \"/usr/bin/other\",\n      \"args\": [],\n      \"tools\": [\"search\"]\n    }\n  }\n}\n",
        kept: &["\"tools\": [\"search\"]"],
        other: &[
            (&["mcpServers", "other", "command"], "/usr/bin/other"),
            (&["mcpServers", "other", "tools", "0"], "search"),
        ],
    },
    Fixture {
        client: "windsurf",
        file: ".codeium/windsurf/mcp_config.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"/usr/bin/other\",\n      \"args\": [\"--flag\"],\n      \"disabled\": true\n    }\n  }\n}\n",
        kept: &["\"disabled\": true"],
        other: &[(&["mcpServers", "other", "command"], "/usr/bin/other")],
    },
    Fixture {
        client: "lm-studio",
        file: ".lmstudio/mcp.json",
        format: "json",
        text: "{\n  \"mcpServers\": {\n    \"other\": {\n      \"url\": \"https://example.org/mcp\"\n    }\n  }\n}\n",
        kept: &["\"url\": \"https://example.org/mcp\""],
        other: &[(&["mcpServers", "other", "url"], "https://example.org/mcp")],
    },
    Fixture {
        client: "claude-desktop",
        file: ".config/Claude/claude_desktop_config.json",
        format: "json",
        text: "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"/usr/bin/other\",\n      \"args\": [\"--stdio\"]\n    }\n  }\n}\n",
        kept: &["\"globalShortcut\": \"Ctrl+Space\""],
        other: &[
            (&["globalShortcut"], "Ctrl+Space"),
            (&["mcpServers", "other", "command"], "/usr/bin/other"),
        ],
    },
    Fixture {
        client: "continue",
        // Project scope (its default): our block file, already holding a server.
        file: ".continue/mcpServers/gatehouse.yaml",
        format: "yaml",
        text: "# Team servers, reviewed quarterly\nname: Team servers\nversion: 1.0.0\nschema: v1\nmcpServers:\n  # the docs search\n  - name: other\n    type: stdio\n    command: /usr/bin/other # pinned\n    args: []\n",
        kept: &[
            "# Team servers, reviewed quarterly",
            "# the docs search",
            "# pinned",
        ],
        other: &[
            (&["name"], "Team servers"),
            (&["mcpServers", "0", "name"], "other"),
            (&["mcpServers", "0", "command"], "/usr/bin/other"),
        ],
    },
];

/// What each client's own documentation says its entry (and file) must hold
/// beyond `command` and `args`, written out here independently of core.
fn assert_documented_shape(client: &str, doc: &Value, e: &Value) {
    let kind = match client {
        "vscode" | "roo-code" | "continue" | "goose" => Some("stdio"),
        "opencode" | "copilot" => Some("local"),
        _ => None,
    };
    if let Some(kind) = kind {
        assert_eq!(e["type"], kind, "{client}: {e}");
    }
    match client {
        // opencode: `command` is the program and its arguments, in one array.
        "opencode" => assert!(e.get("args").is_none() && e["command"].is_array(), "{e}"),
        // Copilot CLI: `tools` lists the tools to enable.
        "copilot" => assert!(e["tools"].is_array(), "{e}"),
        // A Continue block file names itself.
        "continue" => {
            for key in ["name", "version", "schema"] {
                assert!(doc[key].is_string(), "continue: no {key}: {doc}");
            }
        }
        _ => {}
    }
}

fn at<'a>(doc: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(doc, |v, k| match k.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[*k],
    })
}

fn parse_file(format: &str, text: &str) -> Value {
    match format {
        "jsonc" => {
            // A real JSON-with-comments parser: what these clients use.
            jsonc_parser::parse_to_serde_value::<Value>(text, &Default::default()).unwrap()
        }
        other => parse_doc(other, text),
    }
}

#[test]
fn install_keeps_other_entries_and_comments_and_a_second_install_changes_nothing() {
    let site = TestSite::plain("install_merge");
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(BIN).canonicalize().unwrap();
    let site_dir = site.path().canonicalize().unwrap();
    for fx in FIXTURES {
        let path = home.path().join(fx.file);
        write(&path, fx.text);
        let (diff, notes) = ok_in(
            &site,
            home.path(),
            &["config", "install", fx.client, "--public"],
        );
        let new = read(&path);
        assert!(diff.contains("+++ b/"), "{}: no diff:\n{diff}", fx.client);
        assert!(
            !diff.contains("a//"),
            "{}: doubled slash:\n{diff}",
            fx.client
        );
        assert!(
            new.ends_with('\n'),
            "{}: last newline lost:\n{new}",
            fx.client
        );
        assert!(
            diff.lines()
                .any(|l| l.starts_with('+') && l.contains("mcp")),
            "{}: the diff does not add the entry:\n{diff}",
            fx.client
        );
        assert!(
            notes.contains("wrote") && notes.contains("gatehouse.bak"),
            "{notes}"
        );
        for kept in fx.kept {
            assert!(new.contains(kept), "{}: {kept:?} lost:\n{new}", fx.client);
        }
        let old_doc = parse_file(fx.format, fx.text);
        let doc = parse_file(fx.format, &new);
        for (path, value) in fx.other {
            assert_eq!(at(&doc, path), value, "{}: {path:?}", fx.client);
            assert_eq!(at(&doc, path), at(&old_doc, path));
        }
        let e = entry_in(fx.client, &doc, "gatehouse");
        assert_documented_shape(fx.client, &doc, &e);
        let (program, args) = program_and_args(fx.client, &e);
        assert_eq!(Path::new(&program), bin, "{}", fx.client);
        assert_eq!(
            args,
            ["mcp", "--site", site_dir.to_str().unwrap()],
            "{}",
            fx.client
        );
        assert_eq!(read(&backup_of(&path)), fx.text, "{}: backup", fx.client);

        // Again: nothing to change, nothing written, the backup left alone.
        let (diff, notes) = ok_in(
            &site,
            home.path(),
            &["config", "install", fx.client, "--public"],
        );
        assert_eq!(diff, "", "{}: second install printed a diff", fx.client);
        assert!(notes.contains("already holds"), "{notes}");
        assert_eq!(
            read(&path),
            new,
            "{}: second install changed the file",
            fx.client
        );
        assert_eq!(read(&backup_of(&path)), fx.text);
    }
}

#[test]
fn install_creates_a_missing_file_and_dry_run_writes_nothing() {
    let site = TestSite::plain("install_create");
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".kiro/settings/mcp.json");

    let (diff, notes) = ok_in(
        &site,
        home.path(),
        &["config", "install", "kiro", "--public", "--dry-run"],
    );
    assert!(
        diff.lines().any(|l| l.starts_with("+  \"mcpServers\"")),
        "{diff}"
    );
    assert!(notes.contains("dry run"), "{notes}");
    assert!(
        !home.path().join(".kiro").exists(),
        "a dry run created files"
    );

    let out = ok_in(
        &site,
        home.path(),
        &["config", "install", "kiro", "--public", "--json"],
    )
    .0;
    let outcome: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(outcome["existed"], false);
    assert_eq!(outcome["written"], true);
    assert!(outcome.get("backup").is_none(), "{outcome}");
    let doc: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(doc["mcpServers"]["gatehouse"]["args"][0], "mcp");
    assert_eq!(listing(path.parent().unwrap()), ["mcp.json"]);

    // A dry run against an existing file leaves it as it is.
    let before = read(&path);
    ok_in(
        &site,
        home.path(),
        &[
            "config",
            "install",
            "kiro",
            "--email",
            "nobody@example.org",
            "--dry-run",
        ],
    );
    assert_eq!(read(&path), before);
}

#[test]
fn install_refuses_a_file_it_cannot_parse_and_leaves_it_untouched() {
    let site = TestSite::plain("install_broken");
    let (key, _) = site.mint("viewer");
    let home = tempfile::tempdir().unwrap();
    let codex_broken =
        format!("[mcp_servers.other]\nenv = {{ GATEHOUSE_API_KEY = \"{key}\" \ncommand = \n");
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "cursor",
            ".cursor/mcp.json",
            "{\"mcpServers\": {\"a\": ".into(),
        ),
        // Cursor's parser is strict JSON: a comment makes the file unparsable.
        (
            "cursor",
            ".cursor/mcp.json",
            "{ // servers\n  \"mcpServers\": {}\n}\n".into(),
        ),
        (
            "cursor",
            ".cursor/mcp.json",
            "{\"mcpServers\": [1, 2]}\n".into(),
        ),
        (
            "vscode",
            ".config/Code/User/mcp.json",
            "{ \"servers\": { ".into(),
        ),
        ("codex", ".codex/config.toml", codex_broken),
        (
            "goose",
            ".config/goose/config.yaml",
            "extensions: [1,\n  - x: : y\n".into(),
        ),
    ];
    for (client, file, text) in &cases {
        let path = home.path().join(file);
        write(&path, text);
        let dir = path.parent().unwrap();
        let before = listing(dir);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let args = ["config", "install", client, "--public"];
        let f = failure(run_in(&site, home.path(), &args), &args);
        assert_eq!(
            f.code, "CONFIG_FILE_UNPARSABLE",
            "{client} {text:?}: {}",
            f.stderr
        );
        assert!(
            f.stderr.contains(file.rsplit('/').next().unwrap()),
            "{}",
            f.stderr
        );
        assert!(
            !f.stderr.contains(&key),
            "the key in the file leaked to stderr"
        );
        assert_eq!(&read(&path), text, "{client}: the file changed");
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        assert_eq!(listing(dir), before, "{client}: files were added beside it");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn an_inline_key_stays_out_of_the_diff_and_out_of_project_files() {
    let site = TestSite::plain("install_key");
    let (key, _) = site.mint("viewer");
    let home = tempfile::tempdir().unwrap();
    let (diff, _) = ok_in(
        &site,
        home.path(),
        &["config", "install", "cursor", "--api-key", &key],
    );
    assert!(!diff.contains(&key), "the raw key is in the diff");
    assert!(diff.contains("<API key, not shown>"), "{diff}");
    let path = home.path().join(".cursor/mcp.json");
    let doc: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(
        doc["mcpServers"]["gatehouse"]["env"]["GATEHOUSE_API_KEY"],
        key.as_str()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a file holding a key must be private");
    }

    // A project file is usually committed: a raw key is refused there.
    let project = tempfile::tempdir().unwrap();
    let args = [
        "config",
        "install",
        "cursor",
        "--scope",
        "project",
        "--project",
        project.path().to_str().unwrap(),
        "--api-key",
        &key,
    ];
    let f = failure(run_in(&site, home.path(), &args), &args);
    assert_eq!(f.code, "CONFIG_KEY_IN_PROJECT");
    assert!(f.stderr.contains("--secret-ref"), "{}", f.stderr);
    assert!(!project.path().join(".cursor").exists());

    // Claude Code's local scope keeps it in ~/.claude.json, beside what is there.
    let claude = home.path().join(".claude.json");
    write(&claude, "{\n  \"numStartups\": 7,\n  \"projects\": {}\n}\n");
    let p = project.path().canonicalize().unwrap();
    ok_in(
        &site,
        home.path(),
        &[
            "config",
            "install",
            "claude-code",
            "--scope",
            "local",
            "--project",
            p.to_str().unwrap(),
            "--api-key",
            &key,
        ],
    );
    let doc: Value = serde_json::from_str(&read(&claude)).unwrap();
    assert_eq!(doc["numStartups"], 7);
    let entry = &doc["projects"][p.to_str().unwrap()]["mcpServers"]["gatehouse"];
    assert_eq!(entry["env"]["GATEHOUSE_API_KEY"], key.as_str(), "{doc}");
    assert!(!project.path().join(".mcp.json").exists());

    let args = ["config", "install", "jetbrains", "--public"];
    assert_eq!(
        failure(run_in(&site, home.path(), &args), &args).code,
        "CONFIG_INSTALL_UNSUPPORTED"
    );
}

/// Eight installs of different entries into one file at once, while a reader
/// keeps parsing the file: every read sees a whole file (old or new, never a
/// mix), no install loses another's entry, and no scratch file is left.
#[test]
fn concurrent_installs_never_produce_a_torn_file() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let site = TestSite::plain("install_concurrent");
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".cursor/mcp.json");
    // A large file widens the window in which a non-atomic write would be seen.
    let others: serde_json::Map<String, Value> = (0..400)
        .map(|i| {
            (
                format!("other{i}"),
                serde_json::json!({"command": format!("/usr/bin/tool{i}"), "args": vec!["--a-long-argument-to-make-the-file-bigger"; 4]}),
            )
        })
        .collect();
    let original =
        serde_json::to_string_pretty(&serde_json::json!({"mcpServers": others})).unwrap();
    write(&path, &original);

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (done, reads, path) = (done.clone(), reads.clone(), path.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let text = std::fs::read_to_string(&path).expect("the file is always there");
                let doc: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("torn read ({e}) of {} bytes", text.len()));
                assert_eq!(doc["mcpServers"]["other399"]["command"], "/usr/bin/tool399");
                reads.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let children: Vec<_> = (0..8)
        .map(|i| {
            in_home(&site, home.path())
                .args([
                    "config",
                    "install",
                    "cursor",
                    "--public",
                    "--name",
                    &format!("g{i}"),
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    done.store(true, Ordering::SeqCst);
    reader.join().expect("every read parsed");
    assert!(reads.load(Ordering::SeqCst) > 0);

    let doc: Value = serde_json::from_str(&read(&path)).unwrap();
    let servers = doc["mcpServers"].as_object().unwrap();
    for i in 0..8 {
        assert!(
            servers.contains_key(&format!("g{i}")),
            "install g{i} was lost"
        );
    }
    assert_eq!(servers.len(), 408);
    assert_eq!(
        listing(path.parent().unwrap()),
        ["mcp.json", "mcp.json.gatehouse.bak"]
    );
}
