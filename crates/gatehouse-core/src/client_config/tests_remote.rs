//! The remote form (`--url`): every client's documented keys, parsed back with
//! its format's own parser; the refusals; and `install` of a remote entry.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::access::keys;

const URL: &str = "https://gatehouse.example.org/mcp";

fn remote(client: Client, actor: ConfigActor) -> Result<GeneratedConfig> {
    generate(&ConfigRequest {
        client,
        binary: PathBuf::new(),
        site_dir: PathBuf::new(),
        server_name: None,
        actor,
        url: Some(URL.to_string()),
    })
}

fn reference() -> ConfigActor {
    ConfigActor::ApiKey(KeyDelivery::Reference)
}

/// The main snippet as JSON, whatever its syntax.
fn doc(out: &GeneratedConfig) -> Value {
    let s = &out.snippets[0];
    match s.format {
        Format::Json => serde_json::from_str(&s.text).unwrap(),
        Format::Toml => toml::from_str(&s.text).unwrap(),
        Format::Yaml => serde_yaml_ng::from_str(&s.text).unwrap(),
        Format::Shell => panic!("a shell line is never the main snippet"),
    }
}

/// Each client's remote entry with the key referenced, as its documentation
/// or source describes it (see the client's file for the citation).
#[test]
fn remote_forms_carry_each_clients_documented_keys() {
    let bearer = |r: &str| json!({ "Authorization": format!("Bearer {r}") });
    let entry = |client: Client| doc(&remote(client, reference()).unwrap());
    let d = entry(Client::ClaudeCode);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(
        (e["type"].clone(), e["url"].clone()),
        (json!("http"), json!(URL))
    );
    assert_eq!(e["headers"], bearer("${GATEHOUSE_API_KEY}"));

    let d = entry(Client::Codex);
    let e = &d["mcp_servers"]["gatehouse"];
    assert_eq!(e["url"], URL);
    assert_eq!(e["bearer_token_env_var"], "GATEHOUSE_API_KEY");
    assert!(e.get("http_headers").is_none());

    let d = entry(Client::Cursor);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(e["url"], URL);
    assert_eq!(e["headers"], bearer("${env:GATEHOUSE_API_KEY}"));
    assert!(e.get("type").is_none());

    let d = entry(Client::VsCode);
    let e = &d["servers"]["gatehouse"];
    assert_eq!(
        (e["type"].clone(), e["url"].clone()),
        (json!("http"), json!(URL))
    );
    assert_eq!(e["headers"], bearer("${input:gatehouse-api-key}"));
    assert_eq!(d["inputs"][0]["id"], "gatehouse-api-key");
    assert_eq!(d["inputs"][0]["password"], true);

    let d = entry(Client::Windsurf);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(e["serverUrl"], URL);
    assert_eq!(e["headers"], bearer("${env:GATEHOUSE_API_KEY}"));

    let d = entry(Client::Gemini);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(e["httpUrl"], URL);
    assert_eq!(e["headers"], bearer("${GATEHOUSE_API_KEY}"));

    let d = entry(Client::Opencode);
    let e = &d["mcp"]["gatehouse"];
    assert_eq!(
        (e["type"].clone(), e["url"].clone()),
        (json!("remote"), json!(URL))
    );
    assert_eq!(e["headers"], bearer("{env:GATEHOUSE_API_KEY}"));
    assert_eq!(
        (e["oauth"].clone(), e["enabled"].clone()),
        (json!(false), json!(true))
    );

    let d = entry(Client::Cline);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(e["type"], "streamableHttp");
    assert_eq!(e["headers"], bearer("${env:GATEHOUSE_API_KEY}"));

    let d = entry(Client::Continue);
    let e = &d["mcpServers"][0];
    assert_eq!(
        (e["name"].clone(), e["type"].clone()),
        (json!("gatehouse"), json!("streamable-http"))
    );
    assert_eq!(e["url"], URL);
    assert_eq!(
        e["requestOptions"]["headers"],
        bearer("${{ secrets.GATEHOUSE_API_KEY }}")
    );

    for client in [Client::RooCode, Client::ZooCode] {
        let d = entry(client);
        let e = &d["mcpServers"]["gatehouse"];
        assert_eq!(e["type"], "streamable-http", "{client}");
        assert_eq!(e["headers"], bearer("${env:GATEHOUSE_API_KEY}"));
    }

    let d = entry(Client::Copilot);
    let e = &d["mcpServers"]["gatehouse"];
    assert_eq!(
        (e["type"].clone(), e["tools"].clone()),
        (json!("http"), json!(["*"]))
    );
    assert_eq!(e["headers"], bearer("${GATEHOUSE_API_KEY}"));
}

/// The clients without an indirection get the key in the header, in clear,
/// flagged as a secret; `--secret-ref` is refused for them.
#[test]
fn remote_inline_key_goes_only_in_the_header() {
    let key = keys::generate().1;
    let inline = || ConfigActor::ApiKey(KeyDelivery::Inline(key.clone()));
    let bearer = json!({ "Authorization": format!("Bearer {}", key.expose()) });
    let out = remote(Client::Zed, inline()).unwrap();
    assert!(out.snippets[0].contains_secret);
    assert_eq!(doc(&out)["context_servers"]["gatehouse"]["headers"], bearer);
    assert_eq!(doc(&out)["context_servers"]["gatehouse"]["url"], URL);
    let out = remote(Client::LmStudio, inline()).unwrap();
    assert_eq!(doc(&out)["mcpServers"]["gatehouse"]["headers"], bearer);
    let out = remote(Client::Goose, inline()).unwrap();
    let e = &doc(&out)["extensions"]["gatehouse"];
    assert_eq!(
        (e["type"].clone(), e["uri"].clone()),
        (json!("streamable_http"), json!(URL))
    );
    assert_eq!(
        (e["enabled"].clone(), e["name"].clone()),
        (json!(true), json!("gatehouse"))
    );
    assert_eq!(e["headers"], bearer);
    let out = remote(Client::Codex, inline()).unwrap();
    assert_eq!(
        doc(&out)["mcp_servers"]["gatehouse"]["http_headers"],
        bearer
    );
    for client in [Client::Zed, Client::LmStudio, Client::Goose] {
        let err = remote(client, reference()).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_SECRET_REF_UNSUPPORTED, "{client}");
    }
    // Public: no header at all.
    let out = remote(Client::Cursor, ConfigActor::Public).unwrap();
    let e = &doc(&out)["mcpServers"]["gatehouse"];
    assert!(e.get("headers").is_none() && !out.snippets[0].contains_secret);
}

/// `claude mcp add --transport http … --header` references the key; with an
/// inline key it targets `--scope local` and still never carries the key.
#[test]
fn claude_code_remote_mcp_add_line_references_the_key() {
    let out = remote(Client::ClaudeCode, reference()).unwrap();
    let words = shlex::split(&out.snippets[1].text).unwrap();
    assert_eq!(
        words,
        [
            "claude",
            "mcp",
            "add",
            "--transport",
            "http",
            "--scope",
            "project",
            "gatehouse",
            URL,
            "--header",
            "Authorization: Bearer ${GATEHOUSE_API_KEY}",
        ]
    );
    let key = keys::generate().1;
    let out = remote(
        Client::ClaudeCode,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    )
    .unwrap();
    assert!(!out.snippets[1].text.contains(key.expose()));
    assert!(out.snippets[1].text.contains("--scope local"));
    assert_eq!(out.snippets[0].locations[0].scope, "local");
}

/// Claude Desktop (and claude.ai) cannot send a header: the refusal says so
/// and names the OAuth route; clients with no checked remote form say that.
#[test]
fn clients_without_a_header_say_so_and_point_to_oauth() {
    let err = remote(Client::ClaudeDesktop, reference()).unwrap_err();
    assert_eq!(err.code, codes::CONFIG_REMOTE_UNSUPPORTED);
    let hint = err.hint.unwrap();
    assert!(
        hint.contains("OAuth") && hint.contains("claude.ai"),
        "{hint}"
    );
    for client in [Client::JetBrains, Client::Kiro] {
        let err = remote(client, ConfigActor::Public).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_REMOTE_UNSUPPORTED, "{client}");
        assert!(client.remote().is_err());
    }
}

/// A key may travel only over TLS, or to this machine; never in the URL.
#[test]
fn remote_url_must_be_https_or_loopback_and_free_of_keys() {
    let with = |url: &str| {
        generate(&ConfigRequest {
            client: Client::Cursor,
            binary: PathBuf::new(),
            site_dir: PathBuf::new(),
            server_name: None,
            actor: ConfigActor::Public,
            url: Some(url.to_string()),
        })
    };
    for ok in [
        "https://h.example/mcp",
        "http://127.0.0.1:8808/mcp",
        "http://localhost:8808/mcp",
        "http://[::1]:8808/mcp",
    ] {
        assert!(with(ok).is_ok(), "{ok}");
    }
    let key = keys::generate().1;
    for bad in [
        "http://h.example/mcp".to_string(),
        "ftp://h.example/mcp".to_string(),
        "https://user:pw@h.example/mcp".to_string(),
        "https://h.example/mcp#x".to_string(),
        "not a url".to_string(),
        format!("https://h.example/mcp?key={}", key.expose()),
        // Percent-encoded, the same key to a server (it had passed).
        format!(
            "https://h.example/mcp?k={}",
            key.expose().replace('_', "%5F")
        ),
    ] {
        let err = with(&bad).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_URL_INVALID, "{bad}");
        assert!(!err.message.contains(key.expose()), "{}", err.message);
        assert!(
            !err.message.contains(&key.expose().replace('_', "%5F")),
            "{}",
            err.message
        );
    }
    let err = remote(Client::Cursor, ConfigActor::Email("ed@example.org".into())).unwrap_err();
    assert_eq!(err.code, codes::INPUT_INVALID);
}

/// Every client with a remote form, every actor: valid output or the one
/// refusal expected; never a command, never the key outside the header.
#[test]
fn every_remote_form_validates_for_every_actor() {
    let key = keys::generate().1;
    for client in Client::ALL {
        for actor in [
            ConfigActor::Public,
            ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
            reference(),
        ] {
            let by_ref = matches!(actor, ConfigActor::ApiKey(KeyDelivery::Reference));
            match remote(client, actor) {
                Ok(out) => {
                    assert!(client.remote().is_ok());
                    for s in &out.snippets {
                        assert!(!s.text.contains("\"command\""), "{client}: {}", s.text);
                        assert!(s.text.contains(URL), "{client}");
                        assert!(s.text.matches(key.expose()).count() <= 1);
                    }
                }
                Err(e) if client.remote().is_err() => {
                    assert_eq!(e.code, codes::CONFIG_REMOTE_UNSUPPORTED)
                }
                Err(e) => {
                    assert!(by_ref, "{client}: {e}");
                    assert_eq!(e.code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
                }
            }
        }
    }
}

/// The validator rejects a remote entry whose key leaked into the URL or
/// whose header is not the one asked for.
#[test]
fn remote_validation_rejects_tampered_output() {
    let key = keys::generate().1;
    let req = ConfigRequest {
        client: Client::Cursor,
        binary: PathBuf::new(),
        site_dir: PathBuf::new(),
        server_name: None,
        actor: ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        url: Some(URL.into()),
    };
    let spec = spec::ServerSpec::from_request(&req).unwrap();
    let good = clients::render(&spec).unwrap().remove(0);
    validate::validate(&spec, &good).unwrap();
    let tampered = |edit: &dyn Fn(&mut Value)| {
        let mut d: Value = serde_json::from_str(&good.text).unwrap();
        edit(&mut d["mcpServers"]["gatehouse"]);
        let mut s = good.clone();
        s.text = serde_json::to_string(&d).unwrap();
        validate::validate(&spec, &s).unwrap_err().code
    };
    let k = key.expose().to_string();
    assert_eq!(
        tampered(&|e| e["url"] = format!("{URL}?k={k}").into()),
        codes::CONFIG_VALIDATION_FAILED
    );
    assert_eq!(
        tampered(&|e| e["headers"]["Authorization"] = "Bearer other".into()),
        codes::CONFIG_VALIDATION_FAILED
    );
    assert_eq!(
        tampered(&|e| e["command"] = "/bin/sh".into()),
        codes::CONFIG_VALIDATION_FAILED
    );
}

/// `install` writes the remote entry into the client's file and, as for the
/// local form, refuses a raw key in a project file.
#[test]
fn remote_install_writes_the_entry_and_keeps_raw_keys_out_of_project_files() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let request = |actor: ConfigActor, scope| install::InstallRequest {
        config: ConfigRequest {
            client: Client::Cursor,
            binary: PathBuf::new(),
            site_dir: PathBuf::new(),
            server_name: None,
            actor,
            url: Some(URL.into()),
        },
        scope: Some(scope),
        home: Home::new(Os::Linux, home.path().to_path_buf(), |_| None),
        project: Some(project.path().to_path_buf()),
        dry_run: false,
        expected_hash: None,
    };
    let key = keys::generate().1;
    let inline = || ConfigActor::ApiKey(KeyDelivery::Inline(key.clone()));
    let err = install::install(&request(inline(), Scope::Project)).unwrap_err();
    assert_eq!(err.code, codes::CONFIG_KEY_IN_PROJECT);
    let done = install::install(&request(reference(), Scope::Project)).unwrap();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&done.path).unwrap()).unwrap();
    assert_eq!(written["mcpServers"]["gatehouse"]["url"], URL);
    let user = install::install(&request(inline(), Scope::User)).unwrap();
    assert!(!user.diff.contains(key.expose()));
    assert!(user.path.starts_with(home.path()) && Path::new(&user.path).is_file());
}
