//! Codex CLI: `~/.codex/config.toml` (`CODEX_HOME` moves it), a
//! `[mcp_servers.NAME]` table with `command`, `args`, `env`, and `env_vars`, the
//! names of variables Codex forwards from its own environment (Codex docs, MCP
//! page: "env_vars (optional): Environment variables to allow and forward";
//! openai/codex `docs/config.md`).
//!
//! Remote (same page, "Streamable HTTP servers"): `url`, and either
//! `bearer_token_env_var`, the name of a variable Codex sends as
//! `Authorization: Bearer`, or `http_headers`, a static header map (the inline
//! key, user scope only).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, internal, project, user_os};
use super::super::validate::{Shape, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{ClientFile, ClientSpec, Remote, RemoteShape, no_check, no_more_files, variable_name};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Codex CLI",
    aliases: &["codex-cli"],
    shape: Shape {
        forward: Some("env_vars"),
        ..map(&["mcp_servers"])
    },
    secret_ref: Some(variable_name),
    render,
    check: no_check,
    cli: None,
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: remote,
    },
};

const REMOTE: RemoteShape = RemoteShape {
    url: "url",
    kind: None,
    headers: &["http_headers"],
    header_ref: false,
    bearer_env: Some("bearer_token_env_var"),
};

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let path = match scope {
        Scope::User => home
            .var("CODEX_HOME")
            .unwrap_or_else(|| home.dir.join(".codex"))
            .join("config.toml"),
        Scope::Project => join(project, &[".codex", "config.toml"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(path, Syntax::Toml))
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.codex/config.toml"),
        user_os("Windows", "%USERPROFILE%\\.codex\\config.toml"),
        project(".codex/config.toml"),
    ]
}

fn what(spec: &ServerSpec) -> String {
    let mut what = String::from(
        "Append to ~/.codex/config.toml (or .codex/config.toml in a trusted project), replacing \
         any older table of the same name.",
    );
    if spec.by_reference() && spec.url.is_some() {
        what.push_str(&format!(
            " Codex sends {API_KEY_ENV} from the environment codex runs in as the bearer token: \
             export it first."
        ));
    } else if spec.by_reference() {
        what.push_str(&format!(
            " Codex forwards {API_KEY_ENV} from the environment codex runs in: export it first."
        ));
    }
    what
}

fn toml_file(spec: &ServerSpec, server: impl Serialize) -> Result<String> {
    let file = BTreeMap::from([(
        "mcp_servers",
        BTreeMap::from([(spec.name.as_str(), server)]),
    )]);
    toml::to_string(&file).map_err(|e| internal(format!("TOML rendering failed: {e}")))
}

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Server<'a> {
        command: &'a str,
        args: &'a [String],
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env_vars: Vec<&'static str>,
        // Tables last: TOML cannot put a plain key after a sub-table.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    }
    let server = Server {
        command: &spec.command,
        args: &spec.args,
        env_vars: if spec.by_reference() {
            vec![API_KEY_ENV]
        } else {
            Vec::new()
        },
        env: spec.env(),
    };
    let text = toml_file(spec, server)?;
    Ok(vec![spec.snippet(
        Format::Toml,
        locations(),
        text,
        &what(spec),
    )])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Server<'a> {
        url: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        bearer_token_env_var: Option<&'static str>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        http_headers: BTreeMap<&'static str, String>,
    }
    let server = Server {
        url: spec.url.as_deref().unwrap_or_default(),
        bearer_token_env_var: spec.by_reference().then_some(API_KEY_ENV),
        http_headers: match spec.inline_key() {
            Some(_) => {
                BTreeMap::from([("Authorization", spec.authorization().unwrap_or_default())])
            }
            None => BTreeMap::new(),
        },
    };
    let text = toml_file(spec, server)?;
    Ok(vec![spec.snippet(
        Format::Toml,
        locations(),
        text,
        &what(spec),
    )])
}
