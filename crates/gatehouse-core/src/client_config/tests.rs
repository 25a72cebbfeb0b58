use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::Value;

use super::spec::ServerSpec;
use super::validate::validate;
use super::*;
use crate::access::keys;

const BIN: &str = "/opt/gatehouse/bin/gatehouse";
const SITE: &str = "/srv/sites/my blog";
/// A well-formed key minted per run (none is committed).
fn fake_key() -> RawKey {
    keys::generate().1
}

fn request(client: Client, actor: ConfigActor) -> ConfigRequest {
    ConfigRequest {
        client,
        binary: PathBuf::from(BIN),
        site_dir: PathBuf::from(SITE),
        server_name: None,
        actor,
        url: None,
    }
}

fn main_text(client: Client, actor: ConfigActor) -> String {
    generate(&request(client, actor))
        .unwrap()
        .snippets
        .remove(0)
        .text
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn all_actors() -> Vec<ConfigActor> {
    vec![
        ConfigActor::Public,
        ConfigActor::Email("editor@example.com".into()),
        ConfigActor::Roles(vec![Role::Editor, Role::Viewer]),
        ConfigActor::ApiKey(KeyDelivery::Inline(fake_key())),
        ConfigActor::ApiKey(KeyDelivery::Reference),
    ]
}

/// Every client with every actor kind: a config, or the one refusal expected.
#[test]
fn matrix_of_clients_and_actors() {
    for client in Client::ALL {
        for actor in all_actors() {
            let reference = matches!(actor, ConfigActor::ApiKey(KeyDelivery::Reference));
            match generate(&request(client, actor)) {
                Ok(out) => {
                    assert!(!reference || client.supports_secret_ref());
                    assert!(!out.snippets.is_empty());
                    for s in &out.snippets {
                        assert!(!s.text.contains("--api-key"), "{client}: {}", s.text);
                        assert!(s.instructions.contains("The server runs as"));
                    }
                }
                Err(e) => {
                    assert!(reference && !client.supports_secret_ref(), "{client}: {e}");
                    assert_eq!(e.code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
                }
            }
        }
    }
}

#[test]
fn claude_desktop_shape() {
    let doc = json(&main_text(Client::ClaudeDesktop, ConfigActor::Public));
    let entry = &doc["mcpServers"]["gatehouse"];
    assert_eq!(entry["command"], BIN);
    assert_eq!(entry["args"], serde_json::json!(["mcp", "--site", SITE]));
    assert!(entry.get("env").is_none());
    assert!(entry.get("type").is_none());
}

/// Claude Desktop has no reference form, but the extension keeps the key in
/// the OS keychain: the inline-key warning must say so.
#[test]
fn claude_desktop_inline_key_warning_names_the_mcpb_extension() {
    let out = generate(&request(
        Client::ClaudeDesktop,
        ConfigActor::ApiKey(KeyDelivery::Inline(fake_key())),
    ))
    .unwrap();
    let instructions = &out.snippets[0].instructions;
    assert!(
        instructions.contains("`gatehouse config mcpb`") && instructions.contains("keychain"),
        "{instructions}"
    );
}

#[test]
fn claude_code_json_and_shell_agree() {
    let out = generate(&request(
        Client::ClaudeCode,
        ConfigActor::ApiKey(KeyDelivery::Reference),
    ))
    .unwrap();
    assert_eq!(out.snippets.len(), 2);
    let doc = json(&out.snippets[0].text);
    let entry = &doc["mcpServers"]["gatehouse"];
    assert_eq!(entry["type"], "stdio");
    assert_eq!(entry["env"]["GATEHOUSE_API_KEY"], "${GATEHOUSE_API_KEY}");

    let shell = &out.snippets[1];
    assert_eq!(shell.format, Format::Shell);
    let words = shlex::split(&shell.text).unwrap();
    assert_eq!(&words[..4], ["claude", "mcp", "add", "gatehouse"]);
    let e = words.iter().position(|w| w == "-e").unwrap();
    assert_eq!(words[e + 1], "GATEHOUSE_API_KEY=${GATEHOUSE_API_KEY}");
    let sep = words.iter().position(|w| w == "--").unwrap();
    assert!(e < sep, "-e must come before --");
    assert_eq!(words[sep + 1..], [BIN, "mcp", "--site", SITE]);
    // The reference is single-quoted so the shell does not expand it.
    assert!(
        shell
            .text
            .contains("'GATEHOUSE_API_KEY=${GATEHOUSE_API_KEY}'")
    );
}

#[test]
fn claude_code_shell_never_carries_an_inline_key() {
    let key = fake_key();
    let out = generate(&request(
        Client::ClaudeCode,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    ))
    .unwrap();
    assert!(out.snippets[0].contains_secret);
    assert!(out.snippets[0].text.contains(key.expose()));
    assert!(!out.snippets[1].contains_secret);
    assert!(!out.snippets[1].text.contains(key.expose()));
}

#[test]
fn cursor_and_windsurf_use_env_interpolation() {
    for client in [Client::Cursor, Client::Windsurf] {
        let doc = json(&main_text(
            client,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ));
        assert_eq!(
            doc["mcpServers"]["gatehouse"]["env"]["GATEHOUSE_API_KEY"], "${env:GATEHOUSE_API_KEY}",
            "{client}"
        );
    }
}

#[test]
fn vscode_uses_servers_stdio_and_a_password_input() {
    let doc = json(&main_text(
        Client::VsCode,
        ConfigActor::ApiKey(KeyDelivery::Reference),
    ));
    let entry = &doc["servers"]["gatehouse"];
    assert_eq!(entry["type"], "stdio");
    assert_eq!(
        entry["env"]["GATEHOUSE_API_KEY"],
        "${input:gatehouse-api-key}"
    );
    let input = &doc["inputs"][0];
    assert_eq!(input["type"], "promptString");
    assert_eq!(input["id"], "gatehouse-api-key");
    assert_eq!(input["password"], true);
    assert!(doc.get("mcpServers").is_none());

    let plain = json(&main_text(Client::VsCode, ConfigActor::Public));
    assert!(plain.get("inputs").is_none());
}

#[test]
fn zed_uses_context_servers() {
    let doc = json(&main_text(
        Client::Zed,
        ConfigActor::Roles(vec![Role::Viewer]),
    ));
    let entry = &doc["context_servers"]["gatehouse"];
    assert!(
        entry.get("source").is_none(),
        "Zed's migration deletes \"source\""
    );
    assert_eq!(entry["command"], BIN);
    assert_eq!(
        entry["args"],
        serde_json::json!(["mcp", "--site", SITE, "--role", "viewer"])
    );
}

#[test]
fn codex_toml_tables_and_env_vars() {
    let text = main_text(Client::Codex, ConfigActor::ApiKey(KeyDelivery::Reference));
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let server = doc["mcp_servers"]["gatehouse"].as_table().unwrap();
    assert_eq!(server["command"].as_str(), Some(BIN));
    assert_eq!(
        server["env_vars"].as_array().unwrap(),
        &vec![toml::Value::from("GATEHOUSE_API_KEY")]
    );
    assert!(server.get("env").is_none());
    assert!(text.contains("[mcp_servers.gatehouse]"), "{text}");

    let key = fake_key();
    let text = main_text(
        Client::Codex,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    );
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let server = doc["mcp_servers"]["gatehouse"].as_table().unwrap();
    assert_eq!(
        server["env"]["GATEHOUSE_API_KEY"].as_str(),
        Some(key.expose())
    );
    assert!(server.get("env_vars").is_none());
}

#[test]
fn continue_yaml_block() {
    let text = main_text(
        Client::Continue,
        ConfigActor::ApiKey(KeyDelivery::Reference),
    );
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["schema"].as_str(), Some("v1"));
    assert!(doc["version"].as_str().is_some());
    let server = &doc["mcpServers"][0];
    assert_eq!(server["name"].as_str(), Some("gatehouse"));
    assert_eq!(server["type"].as_str(), Some("stdio"));
    assert_eq!(server["command"].as_str(), Some(BIN));
    assert_eq!(
        server["env"]["GATEHOUSE_API_KEY"].as_str(),
        Some("${{ secrets.GATEHOUSE_API_KEY }}")
    );
}

#[test]
fn secret_ref_is_refused_where_the_client_has_no_indirection() {
    for client in [Client::ClaudeDesktop, Client::Zed] {
        let err = generate(&request(
            client,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ))
        .unwrap_err();
        assert_eq!(err.code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
        let hint = err.hint.unwrap();
        assert!(
            hint.contains("vscode") && !hint.contains(client.id()),
            "{hint}"
        );
    }
}

#[test]
fn unknown_client_lists_the_valid_names() {
    let err = "notepad".parse::<Client>().unwrap_err();
    assert_eq!(err.code, codes::CLIENT_UNKNOWN);
    let hint = err.hint.unwrap();
    for client in Client::ALL {
        assert!(hint.contains(client.id()), "{hint}");
    }
}

#[test]
fn client_names_round_trip_and_aliases_parse() {
    for client in Client::ALL {
        assert_eq!(client.id().parse::<Client>().unwrap(), client);
        assert_eq!(
            client.id().to_uppercase().parse::<Client>().unwrap(),
            client
        );
        assert_eq!(serde_json::to_value(client).unwrap(), client.id());
    }
    assert_eq!("VS_Code".parse::<Client>().unwrap(), Client::VsCode);
    assert_eq!("codex-cli".parse::<Client>().unwrap(), Client::Codex);
}

#[test]
fn raw_key_debug_is_redacted_everywhere_it_passes() {
    let key = fake_key();
    let req = request(
        Client::Cursor,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    );
    assert_eq!(format!("{key:?}"), "RawKey(<redacted>)");
    assert!(!format!("{req:?}").contains(key.expose()));
    let out = generate(&req).unwrap();
    assert!(out.snippets[0].text.contains(key.expose()));
    assert!(!format!("{out:?}").contains(key.expose()));
}

#[test]
fn bad_inputs_have_stable_codes() {
    let mut req = request(Client::Cursor, ConfigActor::Public);
    req.binary = PathBuf::from("gatehouse");
    assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_PATH_INVALID);

    let mut req = request(Client::Cursor, ConfigActor::Public);
    req.site_dir = PathBuf::from("/srv/a\nb");
    assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_PATH_INVALID);

    let mut req = request(Client::Cursor, ConfigActor::Public);
    req.server_name = Some("1bad name".into());
    assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_NAME_INVALID);

    let err = generate(&request(
        Client::Cursor,
        ConfigActor::Email("nobody".into()),
    ));
    assert_eq!(err.unwrap_err().code, codes::EMAIL_INVALID);

    let err = generate(&request(Client::Cursor, ConfigActor::Roles(vec![])));
    assert_eq!(err.unwrap_err().code, codes::ROLES_EMPTY);

    let bad_key = RawKey::new("gatehouse_sk_not a key");
    let err = generate(&request(
        Client::Cursor,
        ConfigActor::ApiKey(KeyDelivery::Inline(bad_key)),
    ));
    assert_eq!(err.unwrap_err().code, codes::ACTOR_API_KEY_INVALID);
}

/// The validator is what stands between a rendering bug and a broken paste, so
/// it must reject tampered output, not just accept good output.
#[test]
fn validation_rejects_tampered_output() {
    let key = fake_key();
    let req = request(
        Client::Cursor,
        ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
    );
    let spec = ServerSpec::from_request(&req).unwrap();
    let good = clients::render(&spec).unwrap().remove(0);
    validate(&spec, &good).unwrap();

    let doc = json(&good.text);
    let tampered = |edit: &dyn Fn(&mut Value)| {
        let mut d = doc.clone();
        edit(&mut d);
        let mut s = good.clone();
        s.text = serde_json::to_string(&d).unwrap();
        validate(&spec, &s).unwrap_err().code
    };
    let k = key.expose().to_string();
    let entry = "/mcpServers/gatehouse";
    assert_eq!(
        tampered(&|d| d
            .pointer_mut(&format!("{entry}/args"))
            .unwrap()
            .as_array_mut()
            .unwrap()
            .push(k.clone().into())),
        codes::CONFIG_VALIDATION_FAILED
    );
    assert_eq!(
        tampered(&|d| *d.pointer_mut(&format!("{entry}/command")).unwrap() = "gatehouse".into()),
        codes::CONFIG_VALIDATION_FAILED
    );
    assert_eq!(
        tampered(&|d| {
            d.pointer_mut(entry)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove("env");
        }),
        codes::CONFIG_VALIDATION_FAILED
    );
    assert_eq!(
        tampered(&|d| *d = serde_json::json!({"servers": {}})),
        codes::CONFIG_VALIDATION_FAILED
    );

    let mut broken = good.clone();
    broken.text.pop();
    broken.text.pop();
    assert_eq!(
        validate(&spec, &broken).unwrap_err().code,
        codes::CONFIG_VALIDATION_FAILED
    );

    let mut shell_spec = spec;
    shell_spec.client = Client::ClaudeCode;
    let mut line = clients::render(&shell_spec).unwrap().remove(1);
    validate(&shell_spec, &line).unwrap();
    line.text = line.text.replace("${GATEHOUSE_API_KEY}", &k);
    assert_eq!(
        validate(&shell_spec, &line).unwrap_err().code,
        codes::CONFIG_VALIDATION_FAILED
    );
}

fn site_with(file: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(crate::site::SITE_FILE), file).unwrap();
    dir
}

#[test]
fn check_site_reads_only_gatehouse_toml() {
    let roles = ConfigActor::Roles(vec![Role::Viewer]);
    let real = site_with("name = \"blog\"\n");
    let dir = check_site(real.path(), &ConfigActor::Public).unwrap();
    assert!(dir.is_absolute());
    assert_eq!(dir, real.path().canonicalize().unwrap());
    let err = check_site(real.path(), &roles).unwrap_err();
    assert_eq!(err.code, codes::ACTOR_ROLE_NOT_SCRATCH);

    let scratch = site_with("name = \"play\"\nscratch = true\n");
    check_site(scratch.path(), &roles).unwrap();

    let broken = site_with("name = ");
    let err = check_site(broken.path(), &ConfigActor::Public).unwrap_err();
    assert_eq!(err.code, codes::SITE_CONFIG_INVALID);
    // A policy the server would refuse at every start.
    let bad_policy = site_with("name = \"blog\"\n[approvals]\neffects = [\"publsh\"]\n");
    let err = check_site(bad_policy.path(), &ConfigActor::Public).unwrap_err();
    assert_eq!(err.code, codes::SITE_CONFIG_INVALID);
    assert!(err.message.contains("publsh"), "{}", err.message);

    let empty = tempfile::tempdir().unwrap();
    let err = check_site(empty.path(), &ConfigActor::Public).unwrap_err();
    assert_eq!(err.code, codes::SITE_NOT_FOUND);
}

#[test]
fn verbatim_prefix_is_dropped_only_before_a_drive() {
    let strip = |p: &str| strip_verbatim(PathBuf::from(p));
    assert_eq!(
        strip(r"\\?\C:\x\gatehouse.exe"),
        PathBuf::from(r"C:\x\gatehouse.exe")
    );
    assert_eq!(strip(r"\\?\UNC\srv\x"), PathBuf::from(r"\\?\UNC\srv\x"));
    assert_eq!(
        strip("/usr/bin/gatehouse"),
        PathBuf::from("/usr/bin/gatehouse")
    );
}

fn arb_path() -> impl Strategy<Value = PathBuf> {
    // Spaces, quotes, backslashes, `$`, `#`, non-ASCII: all things a format
    // or a shell could mangle.
    proptest::collection::vec("[a-zA-Z0-9 _.'\"\\\\$#{}é-]{1,10}", 1..4)
        .prop_map(|segs| PathBuf::from(format!("/{}", segs.join("/"))))
}

fn arb_actor() -> impl Strategy<Value = ConfigActor> {
    prop_oneof![
        Just(ConfigActor::Public),
        "[a-z0-9.+_-]{1,12}@[a-z0-9.-]{1,12}".prop_map(ConfigActor::Email),
        proptest::sample::subsequence(Role::GRANTABLE.to_vec(), 1..=4).prop_map(ConfigActor::Roles),
        Just(()).prop_map(|()| ConfigActor::ApiKey(KeyDelivery::Inline(fake_key()))),
        Just(ConfigActor::ApiKey(KeyDelivery::Reference)),
    ]
}

proptest! {
    /// Across every client and actor kind: output parses, runs the binary, and
    /// the key is never in args and is written exactly once, in env, when inline.
    #[test]
    fn every_client_and_actor_yields_safe_valid_config(
        client_index in 0..Client::ALL.len(),
        binary in arb_path(),
        site in arb_path(),
        name in proptest::option::of("[a-zA-Z][a-zA-Z0-9_-]{0,20}"),
        actor in arb_actor(),
    ) {
        let client = Client::ALL[client_index];
        let req = ConfigRequest {
            client,
            binary: binary.clone(),
            site_dir: site.clone(),
            server_name: name.clone(),
            actor: actor.clone(),
            url: None,
        };
        let result = generate(&req);
        if matches!(actor, ConfigActor::ApiKey(KeyDelivery::Reference)) && !client.supports_secret_ref() {
            prop_assert_eq!(result.unwrap_err().code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
            return Ok(());
        }
        let out = result.unwrap();
        let name = name.unwrap_or_else(|| DEFAULT_SERVER_NAME.into());
        prop_assert_eq!(&out.server_name, &name);
        let raw = match &actor {
            ConfigActor::ApiKey(KeyDelivery::Inline(k)) => Some(k.expose().to_string()),
            _ => None,
        };
        for snippet in &out.snippets {
            if let Some(raw) = &raw {
                let n = snippet.text.matches(raw.as_str()).count();
                prop_assert_eq!(n, usize::from(snippet.contains_secret));
            } else {
                prop_assert!(!snippet.contains_secret);
            }
            let (command, args, env) = command_line_of(client, &name, snippet);
            prop_assert_eq!(command.as_str(), binary.to_str().unwrap());
            prop_assert_eq!(&args[..3], &["mcp".to_string(), "--site".into(), site.to_str().unwrap().into()]);
            if let Some(raw) = &raw {
                prop_assert!(args.iter().all(|a| !a.contains(raw.as_str())));
                if snippet.contains_secret {
                    prop_assert_eq!(env.get(API_KEY_ENV), Some(raw));
                }
            }
        }
    }
}

/// Pulls command, args and env out of a snippet with navigation written
/// independently of `validate_doc`, so the property test checks the checker.
fn command_line_of(
    client: Client,
    name: &str,
    snippet: &Snippet,
) -> (String, Vec<String>, BTreeMap<String, String>) {
    let doc: Value = match snippet.format {
        Format::Json => serde_json::from_str(&snippet.text).unwrap(),
        Format::Toml => toml::from_str(&snippet.text).unwrap(),
        Format::Yaml => serde_yaml_ng::from_str(&snippet.text).unwrap(),
        Format::Shell => {
            let words = shlex::split(&snippet.text).unwrap();
            let at = words
                .iter()
                .position(|w| w.starts_with('/') && !w.contains('='))
                .unwrap();
            let args = words[at + 1..]
                .iter()
                .filter(|w| *w != "--")
                .cloned()
                .collect();
            return (words[at].clone(), args, BTreeMap::new());
        }
    };
    let entry = match client {
        Client::VsCode => doc["servers"][name].clone(),
        Client::Zed => doc["context_servers"][name].clone(),
        Client::Codex => doc["mcp_servers"][name].clone(),
        Client::Continue => doc["mcpServers"][0].clone(),
        Client::Goose => {
            let e = doc["extensions"][name.to_lowercase()].clone();
            let env = e
                .get("envs")
                .map(|e| serde_json::from_value(e.clone()).unwrap())
                .unwrap_or_default();
            return (
                e["cmd"].as_str().unwrap().to_string(),
                serde_json::from_value(e["args"].clone()).unwrap(),
                env,
            );
        }
        Client::Opencode => {
            let e = doc["mcp"][name].clone();
            let mut all: Vec<String> = serde_json::from_value(e["command"].clone()).unwrap();
            let env = e
                .get("environment")
                .map(|e| serde_json::from_value(e.clone()).unwrap())
                .unwrap_or_default();
            let command = all.remove(0);
            return (command, all, env);
        }
        _ => doc["mcpServers"][name].clone(),
    };
    let env = entry
        .get("env")
        .map(|e| serde_json::from_value(e.clone()).unwrap())
        .unwrap_or_default();
    (
        entry["command"].as_str().unwrap().to_string(),
        serde_json::from_value(entry["args"].clone()).unwrap(),
        env,
    )
}
