//! The nine newer clients' documented keys, each parsed with its format's own
//! parser, and golden files of every client's full output so a change in
//! wording or shape shows up in review (`UPDATE_EXPECT=1` rewrites them,
//! with expect-test).

use serde_json::{Value, json};

use super::*;
use crate::access::keys;

const BIN: &str = "/opt/gatehouse/bin/gatehouse";
const SITE: &str = "/srv/sites/my blog";

fn out(client: Client, actor: ConfigActor) -> GeneratedConfig {
    generate(&ConfigRequest {
        client,
        binary: PathBuf::from(BIN),
        site_dir: PathBuf::from(SITE),
        server_name: None,
        actor,
        url: None,
    })
    .unwrap()
}

fn reference(client: Client) -> GeneratedConfig {
    out(client, ConfigActor::ApiKey(KeyDelivery::Reference))
}

fn json_of(s: &Snippet) -> Value {
    assert_eq!(s.format, Format::Json);
    serde_json::from_str(&s.text).unwrap()
}

fn args() -> Value {
    json!(["mcp", "--site", SITE])
}

#[test]
fn gemini_settings_and_mcp_add_line() {
    let o = reference(Client::Gemini);
    let e = &json_of(&o.snippets[0])["mcpServers"]["gatehouse"];
    assert_eq!(e["command"], BIN);
    assert_eq!(e["args"], args());
    assert_eq!(e["env"]["GATEHOUSE_API_KEY"], "${GATEHOUSE_API_KEY}");
    assert!(e.get("type").is_none(), "Gemini CLI documents no type");
    let words = shlex::split(&o.snippets[1].text).unwrap();
    assert_eq!(&words[..5], ["gemini", "mcp", "add", "-s", "user"]);
    // `--` goes before the first argument that starts with `-`.
    let at = words.iter().position(|w| w == BIN).unwrap();
    assert_eq!(words[at + 1..], ["mcp", "--", "--site", SITE]);
    let e_flag = words.iter().position(|w| w == "-e").unwrap();
    assert!(e_flag < at && words[e_flag + 1] == "GATEHOUSE_API_KEY=${GATEHOUSE_API_KEY}");
}

#[test]
fn cline_and_roo_code_use_env_colon_references() {
    let cline = &json_of(&reference(Client::Cline).snippets[0])["mcpServers"]["gatehouse"];
    assert_eq!(
        cline["env"]["GATEHOUSE_API_KEY"],
        "${env:GATEHOUSE_API_KEY}"
    );
    assert_eq!(cline["disabled"], false);
    let roo = &json_of(&reference(Client::RooCode).snippets[0])["mcpServers"]["gatehouse"];
    assert_eq!(roo["type"], "stdio");
    assert_eq!(roo["env"]["GATEHOUSE_API_KEY"], "${env:GATEHOUSE_API_KEY}");
    assert_eq!(roo["args"], args());
}

#[test]
fn jetbrains_and_lm_studio_are_plain_and_have_no_reference() {
    for client in [Client::JetBrains, Client::LmStudio] {
        let o = out(client, ConfigActor::Email("ed@example.org".into()));
        let e = &json_of(&o.snippets[0])["mcpServers"]["gatehouse"];
        assert_eq!(e["command"], BIN);
        assert_eq!(
            e["args"],
            json!(["mcp", "--site", SITE, "--email", "ed@example.org"])
        );
        assert!(!client.supports_secret_ref());
    }
    assert!(!Client::JetBrains.installable());
}

#[test]
fn goose_extension_has_every_required_key() {
    let o = reference(Client::Goose);
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&o.snippets[0].text).unwrap();
    let e = &doc["extensions"]["gatehouse"];
    assert_eq!(e["enabled"].as_bool(), Some(true));
    assert_eq!(e["type"].as_str(), Some("stdio"));
    assert_eq!(e["name"].as_str(), Some("gatehouse"));
    assert_eq!(e["cmd"].as_str(), Some(BIN));
    assert_eq!(e["args"][2].as_str(), Some(SITE));
    assert_eq!(e["env_keys"][0].as_str(), Some("GATEHOUSE_API_KEY"));
    assert!(e.get("envs").is_none());
    let key = keys::generate().1;
    let o = out(
        Client::Goose,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    );
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&o.snippets[0].text).unwrap();
    let e = &doc["extensions"]["gatehouse"];
    assert_eq!(e["envs"]["GATEHOUSE_API_KEY"].as_str(), Some(key.expose()));
    assert!(e.get("env_keys").is_none());
}

#[test]
fn opencode_command_is_one_array_and_env_is_environment() {
    let doc = json_of(&reference(Client::Opencode).snippets[0]);
    assert_eq!(doc["$schema"], "https://opencode.ai/config.json");
    let e = &doc["mcp"]["gatehouse"];
    assert_eq!(e["type"], "local");
    assert_eq!(e["command"], json!([BIN, "mcp", "--site", SITE]));
    assert!(e.get("args").is_none());
    assert_eq!(
        e["environment"]["GATEHOUSE_API_KEY"],
        "{env:GATEHOUSE_API_KEY}"
    );
    assert_eq!(e["enabled"], true);
}

#[test]
fn kiro_and_copilot_expand_braces() {
    let kiro = &json_of(&reference(Client::Kiro).snippets[0])["mcpServers"]["gatehouse"];
    assert_eq!(kiro["env"]["GATEHOUSE_API_KEY"], "${GATEHOUSE_API_KEY}");
    let o = reference(Client::Copilot);
    let e = &json_of(&o.snippets[0])["mcpServers"]["gatehouse"];
    assert_eq!(e["type"], "local");
    assert_eq!(e["tools"], json!(["*"]));
    assert_eq!(e["env"]["GATEHOUSE_API_KEY"], "${GATEHOUSE_API_KEY}");
    let words = shlex::split(&o.snippets[1].text).unwrap();
    assert_eq!(&words[..4], ["copilot", "mcp", "add", "gatehouse"]);
    let sep = words.iter().position(|w| w == "--").unwrap();
    assert_eq!(words[sep + 1..], [BIN, "mcp", "--site", SITE]);
}

#[test]
fn claude_desktop_lists_both_windows_installers() {
    let o = out(Client::ClaudeDesktop, ConfigActor::Public);
    let paths: Vec<(&str, &str)> = o.snippets[0]
        .locations
        .iter()
        .map(|l| (l.os.unwrap_or(""), l.path.as_str()))
        .collect();
    assert!(paths.iter().any(|(os, p)| os.contains("MSIX")
        && p.contains("Packages\\Claude_pzs8sxrjxfjjc\\LocalCache\\Roaming\\Claude")));
    assert!(
        paths
            .iter()
            .any(|(os, p)| os.contains(".exe") && p.starts_with("%APPDATA%\\Claude"))
    );
}

#[test]
fn claude_code_inline_key_targets_local_scope_and_continue_names_env_files() {
    let key = keys::generate().1;
    let o = out(
        Client::ClaudeCode,
        ConfigActor::ApiKey(KeyDelivery::Inline(key)),
    );
    assert_eq!(o.snippets[0].locations[0].scope, "local");
    assert!(o.snippets[0].instructions.contains("--scope local"));
    let words = shlex::split(&o.snippets[1].text).unwrap();
    let scope = words.iter().position(|w| w == "--scope").unwrap();
    assert_eq!(words[scope + 1], "local");
    let r = reference(Client::ClaudeCode);
    assert!(
        r.snippets[0]
            .instructions
            .contains("desktop app does not expand")
    );

    let c = reference(Client::Continue);
    let text = &c.snippets[0].instructions;
    assert!(
        text.contains("~/.continue/.env") && !text.contains("Hub"),
        "{text}"
    );
    let w = reference(Client::Windsurf);
    assert!(w.snippets[0].instructions.contains("Cascade → MCP Servers"));
}

/// Every client's full output (text, locations, instructions) for one
/// reference config (or the email actor where there is no reference).
fn golden_text(client: Client) -> String {
    let o = if client.supports_secret_ref() {
        reference(client)
    } else {
        out(client, ConfigActor::Email("ed@example.org".into()))
    };
    render_golden(&o)
}

fn render_golden(o: &GeneratedConfig) -> String {
    let mut s = String::new();
    for (i, snippet) in o.snippets.iter().enumerate() {
        s.push_str(&format!("=== snippet {i} ({:?})\n", snippet.format));
        for l in &snippet.locations {
            let os = l.os.map(|o| format!(" [{o}]")).unwrap_or_default();
            s.push_str(&format!("--- {}{os}: {}\n", l.scope, l.path));
        }
        s.push_str(&format!("--- instructions: {}\n", snippet.instructions));
        s.push_str(&snippet.text);
    }
    s
}

/// The remote form's full output for every client that has one: with the
/// key referenced where the client can, else for the public actor.
fn golden_remote_text(client: Client) -> Option<String> {
    client.remote().ok()?;
    let request = |actor| ConfigRequest {
        client,
        binary: PathBuf::new(),
        site_dir: PathBuf::new(),
        server_name: None,
        actor,
        url: Some("https://gatehouse.example.org/mcp".into()),
    };
    let o = generate(&request(ConfigActor::ApiKey(KeyDelivery::Reference)))
        .or_else(|_| generate(&request(ConfigActor::Public)))
        .unwrap();
    Some(render_golden(&o))
}

#[test]
fn golden_files_match_every_client() {
    check_golden("golden", golden_text);
}

#[test]
fn golden_remote_files_match_every_client_with_a_remote_form() {
    check_golden("golden/remote", |c| {
        golden_remote_text(c).unwrap_or_default()
    });
}

fn check_golden(folder: &str, text_of: impl Fn(Client) -> String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/client_config")
        .join(folder);
    for client in Client::ALL {
        let path = dir.join(format!("{}.txt", client.id()));
        let text = text_of(client);
        if text.is_empty() {
            assert!(!path.exists(), "{} is stale", path.display());
            continue;
        }
        expect_test::expect_file![path].assert_eq(&text);
    }
}
