//! Grants for the admin: listed beside keys, revoked like keys.

use serde::Serialize;

use super::Principal;

use crate::access::audit::{self, AuditAction, AuditEntry};
use crate::access::key_usage::{self, KeyUsage, WEEK_MS};
use crate::error::{Code, Error, Result};
use crate::store::Store;
use crate::store::oauth as sql;
use crate::time::now_ms;

/// A grant as `gatehouse oauth grants` shows it (and the desktop's Keys
/// screen, through IPC).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct GrantInfo {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    /// Where the client's redirects go.
    pub redirect_host: String,
    /// Whom the grant acts as: a key's actor or a user's.
    pub acts_as: Principal,
    pub scopes: String,
    pub resource: String,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub created_at: i64,
    /// The address the consent came from.
    pub created_from: Option<String>,
    /// When a token of the grant was last checked (at most once a minute).
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub last_used_at: Option<i64>,
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub revoked_at: Option<i64>,
    pub revoked_reason: Option<String>,
}

/// Every grant, oldest first (revoked ones too, with why).
pub async fn list(store: &Store) -> Result<Vec<GrantInfo>> {
    let mut out = Vec::new();
    for g in sql::list_grants(store).await? {
        let client = sql::get_client(store, &g.client_id).await?;
        let redirect_host = url::Url::parse(&g.redirect_uri)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        out.push(GrantInfo {
            client_name: client
                .map(|c| c.name)
                .unwrap_or_else(|| "(client removed)".into()),
            id: g.id,
            client_id: g.client_id,
            redirect_host,
            acts_as: Principal::from_columns(g.key_id, g.user_email)?,
            scopes: g.scopes,
            resource: g.resource,
            created_at: g.created_at,
            created_from: g.created_from,
            last_used_at: g.last_used_at,
            revoked_at: g.revoked_at,
            revoked_reason: g.revoked_reason,
        });
    }
    Ok(out)
}

/// A grant with what it did lately: the same usage a key shows (last call,
/// from where, calls by tool over the last day and week, refusals).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct GrantOverview {
    #[serde(flatten)]
    #[ts(flatten)]
    pub grant: GrantInfo,
    pub usage: KeyUsage,
}

/// Every grant with its usage at `now`, oldest first. A grant unused in the
/// week (its tokens are checked at every request, so `last_used_at` says
/// so) reads no audit at all.
pub async fn list_with_usage(store: &Store, now: i64) -> Result<Vec<GrantOverview>> {
    let mut out = Vec::new();
    for grant in list(store).await? {
        let usage = if grant
            .last_used_at
            .is_some_and(|t| t >= now - WEEK_MS - 60_000)
        {
            key_usage::of_grant(store, &grant.id, now).await?
        } else {
            KeyUsage::default()
        };
        out.push(GrantOverview { grant, usage });
    }
    Ok(out)
}

/// One grant with its usage at `now`.
pub async fn overview(store: &Store, id: &str, now: i64) -> Result<GrantOverview> {
    let grant = list(store)
        .await?
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| not_found(id))?;
    let usage = key_usage::of_grant(store, id, now).await?;
    Ok(GrantOverview { grant, usage })
}

fn not_found(id: &str) -> Error {
    Error::new(Code::OAUTH_GRANT_NOT_FOUND, format!("no OAuth grant {id}"))
        .hint("list grants with `gatehouse oauth grants`")
}

/// Revokes a grant and its tokens, recorded as done by `actor`.
pub async fn revoke(store: &Store, actor: &str, id: &str) -> Result<()> {
    let mut tx = store.begin_write().await?;
    let Some(grant) = sql::get_grant(&mut tx, id).await? else {
        return Err(not_found(id));
    };
    if grant.revoked_at.is_some() {
        return Err(Error::new(
            Code::OAUTH_GRANT_NOT_FOUND,
            format!("OAuth grant {id} is already revoked"),
        )
        .hint("nothing to do"));
    }
    sql::revoke_grant(&mut tx, id, now_ms(), "revoked by an admin").await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::OauthRevoke,
            subject: id,
            detail: serde_json::json!({
                "client_id": grant.client_id,
                "key_id": grant.key_id,
                "user": grant.user_email,
            }),
        },
    )
    .await?;
    crate::store::access::bump(&mut tx).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a grant revocation", e))
}
