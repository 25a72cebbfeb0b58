//! What `gatehouse mcp` really serves one actor: the server is spawned
//! through this client, sandboxed, with a profile that grants the open site
//! and nothing else, and its tool list is read as any client would read it.
//! [`compare`] lines two manifests up and marks the tools only one has.
//!
//! The actor is chosen as the CLI chooses it: no flag (anonymous `public`),
//! `--role` (scratch sites only), `--email`, or an API key: its secret, when
//! the caller holds it, goes to the child as the secret variable
//! `GATEHOUSE_API_KEY` (never in argv), else the key is named by `--key-id`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::saved;
use crate::access::actor::{self, ActorFlags, ENV_API_KEY};
use crate::access::audit::AuditActor;
use crate::access::keys::{ID_LEN, RawKey, is_key_id};
use crate::access::permissions::parse_roles;
use crate::error::{Error, Result, codes};
use crate::mcp::client::Connection;
use crate::mcp::client::lifecycle::MemoryRecorder;
use crate::mcp::client::options::ConnectOptions;
use crate::sandbox::stderr::TailSnapshot;
use crate::sandbox::{ChildSpec, EnvValue, Isolation, Profile, SecretValue};
use crate::site::Site;
use crate::store::DatabaseKind;

/// Who to preview.
#[derive(Debug, Clone)]
pub enum PreviewActor {
    /// The anonymous actor (no flag).
    Public,
    /// Synthetic roles, comma-separated (`--role`; scratch sites only).
    Roles(String),
    /// A user of the site (`--email`).
    User(String),
    /// An API key: its id, and its raw key when the caller holds it (a key
    /// just minted), so the preview also proves the secret works.
    Key { key_id: String, raw: Option<RawKey> },
}

impl PreviewActor {
    /// How the preview names the actor.
    pub fn label(&self) -> String {
        match self {
            PreviewActor::Public => AuditActor::Public.to_string(),
            PreviewActor::Roles(roles) => format!("roles:{roles}"),
            PreviewActor::User(email) => AuditActor::User(email.clone()).to_string(),
            PreviewActor::Key { key_id, .. } => AuditActor::Key(key_id.clone()).to_string(),
        }
    }
}

/// One tool as served to the actor.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct PreviewTool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[ts(type = "unknown")]
    pub annotations: Value,
}

/// The manifest one actor gets, and how the server ran.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ActorManifest {
    pub actor: String,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub protocol_version: String,
    pub tools: Vec<PreviewTool>,
    /// What the server wrote to stderr (bounded excerpt, secrets redacted),
    /// with where core's marker sits: the window shows it as a tail.
    #[serde(skip)]
    #[ts(skip)]
    pub stderr: TailSnapshot,
    /// The sandbox profile's grant, for the page to show: the site folder.
    pub granted_paths: Vec<String>,
    pub isolation_warnings: Vec<String>,
    /// The actor's effective reach in words, as core decides it (roles,
    /// then a key's restrictions): what the page shows above the tools.
    pub reach: Vec<String>,
}

/// What to spawn to preview `actor` on `site` with the CLI at `cli`, and the
/// profile to spawn it under: the site folder read-write, nothing else
/// (network only when the site's database is PostgreSQL).
pub fn spec(site: &Site, cli: &Path, actor: &PreviewActor) -> Result<(ChildSpec, Profile)> {
    let dir = site.dir.canonicalize().unwrap_or_else(|_| site.dir.clone());
    // At the CLI's default level (warn) a healthy server writes nothing, and
    // the preview's stderr excerpt was always empty: at info it shows how the
    // server started (the actor it serves, the revision it negotiated).
    let mut spec = ChildSpec::new(cli.to_string_lossy())
        .arg("--site")
        .arg(dir.to_string_lossy())
        .arg("mcp")
        .env(
            "GATEHOUSE_LOG",
            EnvValue::Plain {
                value: "info".into(),
            },
        );
    match actor {
        PreviewActor::Public => {}
        PreviewActor::Roles(roles) => {
            // Checked here so a bad list or a non-scratch site fails with
            // core's error, not as a server that exited.
            parse_roles(roles)?;
            if !site.is_scratch() {
                return Err(Error::invalid(
                    codes::INPUT_INVALID,
                    "roles can be previewed on a scratch site only",
                    "pick a user or a key of this site, or open a scratch site",
                ));
            }
            spec = spec.arg(format!("--role={roles}"));
        }
        // One `--flag=value` word each: a value can never read as a flag.
        PreviewActor::User(email) => {
            let email = crate::access::users::check_email(email)?;
            spec = spec.arg(format!("--email={email}"));
        }
        PreviewActor::Key { raw: Some(raw), .. } => {
            spec = spec.env(
                ENV_API_KEY,
                EnvValue::Secret {
                    value: SecretValue::new(raw.expose()),
                },
            );
        }
        PreviewActor::Key { key_id, raw: None } => {
            check_key_id(key_id)?;
            spec = spec.arg(format!("--key-id={key_id}"));
        }
    }
    // The database the site's folder names, as the app opened it: the host's
    // `GATEHOUSE_DATABASE_URL` (which the app does not read) had pointed the
    // preview at another database. Its password, when the host gives one, as
    // the app used it.
    if crate::host_env::host_var("PGPASSWORD").is_some() {
        spec = spec.env(
            "PGPASSWORD",
            EnvValue::SecretFromHost {
                name: "PGPASSWORD".into(),
            },
        );
    }
    let profile = Profile {
        read_write: vec![dir],
        network: site.store.backend() == DatabaseKind::Postgres,
        ..Profile::default()
    };
    Ok((spec, profile))
}

/// A key id as minted ([`is_key_id`]).
fn check_key_id(key_id: &str) -> Result<()> {
    if is_key_id(key_id) {
        return Ok(());
    }
    Err(Error::invalid(
        codes::INPUT_INVALID,
        format!("{key_id:?} is not a key id"),
        format!("a key id is {ID_LEN} letters or digits, as `gatehouse keys list` shows it"),
    ))
}

/// Spawns `gatehouse mcp` as `actor` (see [`spec`]), reads its manifest and
/// tool list, and shuts it down. Records stay in memory: a preview is not a
/// stored connection.
pub async fn preview(site: &Site, cli: &Path, actor: &PreviewActor) -> Result<ActorManifest> {
    let (spec, profile) = spec(site, cli, actor)?;
    let granted_paths = profile
        .read_write
        .iter()
        .map(|p: &PathBuf| p.display().to_string())
        .collect();
    let mut opts = ConnectOptions::new(
        spec,
        saved::scratch_root(site)?,
        Arc::new(MemoryRecorder::default()),
    );
    opts.name = Some(format!("preview {}", actor.label()));
    opts.profile = profile;
    let conn = Connection::connect(opts).await?;
    let isolation: Isolation = conn.isolation().clone();
    let server = conn.server();
    let tools = conn.list_tools().await;
    let stderr = conn.stderr().excerpt();
    conn.close().await;
    let mut tools: Vec<PreviewTool> = tools?
        .into_iter()
        .map(|t| PreviewTool {
            name: t.name,
            title: t.title,
            description: t.description,
            annotations: t.annotations,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let reach = reach_words(site, actor).await;
    Ok(ActorManifest {
        actor: actor.label(),
        server_name: server.name,
        server_version: server.version,
        protocol_version: server.protocol_version,
        tools,
        stderr,
        granted_paths,
        isolation_warnings: isolation.warnings,
        reach,
    })
}

/// The actor's reach in words, resolved here as the server resolves it; a
/// refused actor (a revoked key) says why.
async fn reach_words(site: &Site, actor: &PreviewActor) -> Vec<String> {
    let flags = match actor {
        PreviewActor::Public => ActorFlags::default(),
        PreviewActor::Roles(roles) => ActorFlags {
            role: Some(roles.clone()),
            ..ActorFlags::default()
        },
        PreviewActor::User(email) => ActorFlags {
            email: Some(email.clone()),
            ..ActorFlags::default()
        },
        PreviewActor::Key { key_id, .. } => ActorFlags {
            key_id: Some(key_id.clone()),
            ..ActorFlags::default()
        },
    };
    match actor::resolve(&site.store, site.is_scratch(), &flags).await {
        Ok(a) => crate::mcp::server::reach::describe(&a).words,
        Err(e) => vec![format!("refused: {}", e.message)],
    }
}

/// Which side of a comparison has a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    OnlyLeft,
    OnlyRight,
}

/// One row of a side-by-side comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ComparedTool {
    pub name: String,
    pub presence: Presence,
    /// Both have it but describe or annotate it differently.
    pub differs: bool,
}

/// Every tool of `left` and `right` by name, in name order, each marked with
/// the side(s) that have it.
pub fn compare(left: &[PreviewTool], right: &[PreviewTool]) -> Vec<ComparedTool> {
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<&str, (Option<&PreviewTool>, Option<&PreviewTool>)> = BTreeMap::new();
    for t in left {
        rows.entry(&t.name).or_default().0 = Some(t);
    }
    for t in right {
        rows.entry(&t.name).or_default().1 = Some(t);
    }
    rows.into_iter()
        .map(|(name, sides)| {
            let (presence, differs) = match sides {
                (Some(l), Some(r)) => (Presence::Both, l != r),
                (Some(_), None) => (Presence::OnlyLeft, false),
                _ => (Presence::OnlyRight, false),
            };
            ComparedTool {
                name: name.to_string(),
                presence,
                differs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, desc: &str) -> PreviewTool {
        PreviewTool {
            name: name.into(),
            title: None,
            description: Some(desc.into()),
            annotations: json!({}),
        }
    }

    #[test]
    fn compare_marks_the_tools_only_one_side_has() {
        let public = [tool("content_read", "read"), tool("search", "find")];
        let editor = [
            tool("content_publish", "publish"),
            tool("content_read", "read"),
            tool("search", "find more"),
        ];
        let rows = compare(&public, &editor);
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.presence, r.differs))
            .collect();
        assert_eq!(
            got,
            [
                ("content_publish", Presence::OnlyRight, false),
                ("content_read", Presence::Both, false),
                ("search", Presence::Both, true),
            ]
        );
        assert_eq!(compare(&editor, &public)[0].presence, Presence::OnlyLeft);
    }
}
