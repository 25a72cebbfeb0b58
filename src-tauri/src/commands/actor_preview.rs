//! Commands for the Actor preview screen: who can be previewed, and the
//! manifest `gatehouse mcp` really serves one or two actors, side by side
//! (core spawns the CLI sandboxed, see `connections::actor_preview`).

use gatehouse_core::Error;
use gatehouse_core::access::keys;
use gatehouse_core::access::permissions::{Role, parse_roles};
use gatehouse_core::access::users;
use gatehouse_core::connections::actor_preview::{self, ActorManifest, ComparedTool, PreviewActor};
use serde::{Deserialize, Serialize};
use tauri::State;

use crate::commands::connections::{TailMessage, ended_tail};
use crate::error::IpcResult;
use crate::state::AppState;

/// An actor the page picked.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActorChoice {
    Public,
    /// Synthetic roles (scratch sites only).
    Roles {
        roles: Vec<Role>,
    },
    User {
        email: String,
    },
    /// A key by its id: its secret goes to the server when this window
    /// minted or rolled it (in memory only), else the key is named by id.
    Key {
        key_id: String,
    },
}

/// A key the page may pick (neither revoked nor expired).
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct PreviewKey {
    pub id: String,
    pub label: String,
    pub roles: Vec<Role>,
}

/// Who can be previewed on the open site.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct PreviewChoices {
    /// Roles can be previewed only on a scratch site.
    pub scratch: bool,
    pub roles: Vec<Role>,
    pub users: Vec<String>,
    pub keys: Vec<PreviewKey>,
}

/// One or two manifests and, for two, the tools lined up.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct ActorComparison {
    pub left: ActorManifest,
    pub right: Option<ActorManifest>,
    pub rows: Vec<ComparedTool>,
    /// Each server's stderr as a connection's tail stream carries it (the
    /// page shows it in the same tail panel); `right_stderr` is empty alone.
    pub left_stderr: Vec<TailMessage>,
    pub right_stderr: Vec<TailMessage>,
}

/// The arguments of the `preview_choices` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PreviewChoicesArgs {}

#[tauri::command(rename_all = "snake_case")]
pub async fn preview_choices(
    args: PreviewChoicesArgs,
    state: State<'_, AppState>,
) -> IpcResult<PreviewChoices> {
    let PreviewChoicesArgs {} = args;
    let site = state.site()?;
    let users = users::list(&site.store).await?;
    let keys = keys::list(&site.store).await?;
    Ok(PreviewChoices {
        scratch: site.is_scratch(),
        roles: Role::GRANTABLE.to_vec(),
        users: users.into_iter().map(|u| u.email).collect(),
        keys: keys
            .into_iter()
            .filter(|k| k.status == keys::KeyStatus::Active)
            .map(|k| PreviewKey {
                id: k.id,
                label: k.label,
                roles: k.roles,
            })
            .collect(),
    })
}

fn resolve(state: &AppState, choice: ActorChoice) -> Result<PreviewActor, Error> {
    Ok(match choice {
        ActorChoice::Public => PreviewActor::Public,
        ActorChoice::Roles { roles } => {
            let list = roles
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(",");
            parse_roles(&list)?;
            PreviewActor::Roles(list)
        }
        ActorChoice::User { email } => PreviewActor::User(email),
        ActorChoice::Key { key_id } => PreviewActor::Key {
            raw: state.minted_key(&key_id),
            key_id,
        },
    })
}

/// The arguments of the `preview_actors` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PreviewActorsArgs {
    pub left: ActorChoice,
    pub right: Option<ActorChoice>,
}

/// Spawns `gatehouse mcp` as `left` (and as `right`, at the same time) and
/// returns what each is served, tools lined up when there are two.
#[tauri::command(rename_all = "snake_case")]
pub async fn preview_actors(
    args: PreviewActorsArgs,
    state: State<'_, AppState>,
) -> IpcResult<ActorComparison> {
    let PreviewActorsArgs { left, right } = args;
    let site = state.site()?;
    let cli = crate::cli_binary::locate()?;
    let left = resolve(&state, left)?;
    let right = right.map(|r| resolve(&state, r)).transpose()?;
    let (left, right) = tokio::join!(actor_preview::preview(&site, &cli, &left), async {
        match &right {
            Some(r) => Some(actor_preview::preview(&site, &cli, r).await),
            None => None,
        }
    });
    let left = left?;
    let right = right.transpose()?;
    let rows = actor_preview::compare(&left.tools, right.as_ref().map_or(&[][..], |r| &r.tools));
    Ok(ActorComparison {
        left_stderr: ended_tail(&left.stderr),
        right_stderr: right
            .as_ref()
            .map_or_else(Vec::new, |r| ended_tail(&r.stderr)),
        left,
        right,
        rows,
    })
}
