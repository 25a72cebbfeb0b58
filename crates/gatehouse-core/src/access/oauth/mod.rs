//! OAuth 2.1 for `gatehouse serve`: the site as its own authorization server
//! and resource server, following the MCP authorization specification.
//!
//! Map: [`scope`] says what each scope covers; [`client`] registers clients
//! (RFC 7591) and reads client ID metadata documents (fetched by the HTTP
//! adapter through the `http_fetch` SSRF guard); [`flow`] is the
//! authorization code flow (pending consent, codes bound to client, redirect
//! URI, PKCE S256 challenge, resource and scopes; token issue, refresh
//! rotation with reuse detection, the per-request token check); [`grants`]
//! lists and revokes grants for the admin. All state is in the site store
//! (`store::oauth`), so any number of instances share one set of grants.
//!
//! A grant acts as a [`Principal`]: an API key's actor (the key pasted on the
//! consent page, or named by an admin approving a pairing code with
//! `--key-id`) or a user's (`--as EMAIL`), narrowed to the grant's scopes
//! ([`scope::ScopeSet`] in the actor's restrictions). The principal is re-read
//! on every request: revoking or expiring the key ends the grant, and
//! disabling or removing the user revokes it (`users::disable`, `users::delete`).
//!
//! Every secret here (client secret, code, access and refresh token, CSRF
//! token) is 32 random bytes shown once and stored as its SHA-256 only.

pub mod client;
pub mod flow;
pub mod grants;
pub mod scope;

use base64::Engine;
use rand::RngExt;
use rand::rand_core::UnwrapErr;
use rand::rngs::SysRng;
use sha2::{Digest, Sha256};

use crate::access::actor::Actor;
use crate::access::audit::AuditActor;
use crate::access::keys;
use crate::access::permissions::{Action, Role};
use crate::access::restrictions::Restrictions;
use crate::access::users;
use crate::error::{Code, Error, Result};
use crate::store::Store;
pub use scope::{Scope, ScopeSet};

/// Whom a grant acts as. Stored as exactly one of two columns (`key_id`,
/// `user_email`), which [`Principal::from_columns`] reads back. The desktop
/// sends one back when an admin approves a pairing code.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
#[ts(rename = "GrantPrincipal")]
pub enum Principal {
    /// An API key's actor, by key id.
    Key(String),
    /// A user's actor, by email.
    User(String),
}

impl Principal {
    /// Reads the two stored columns; both or neither set is a damaged row.
    pub fn from_columns(key_id: Option<String>, email: Option<String>) -> Result<Principal> {
        match (key_id, email) {
            (Some(k), None) => Ok(Principal::Key(k)),
            (None, Some(e)) => Ok(Principal::User(e)),
            _ => Err(Error::new(
                Code::STORAGE_ERROR,
                "an OAuth grant names neither or both of a key and a user",
            )
            .hint("revoke the grant with `gatehouse oauth revoke ID` and connect the application again")),
        }
    }

    /// The two stored columns: `(key_id, user_email)`.
    pub fn columns(&self) -> (Option<String>, Option<String>) {
        match self {
            Principal::Key(k) => (Some(k.clone()), None),
            Principal::User(e) => (None, Some(e.clone())),
        }
    }

    /// Who the audit log names for the grant's own acts (approval, grant).
    pub fn audit_actor(&self) -> AuditActor {
        match self {
            Principal::Key(k) => AuditActor::Key(k.clone()),
            Principal::User(e) => AuditActor::User(e.clone()),
        }
    }

    pub fn key_id(&self) -> Option<&str> {
        match self {
            Principal::Key(k) => Some(k),
            Principal::User(_) => None,
        }
    }

    pub fn email(&self) -> Option<&str> {
        match self {
            Principal::User(e) => Some(e),
            Principal::Key(_) => None,
        }
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Key(k) => write!(f, "key {k}"),
            Principal::User(e) => write!(f, "user {e}"),
        }
    }
}

/// A principal as the store has it now: its roles, a key's restrictions,
/// and when a key stops working.
#[derive(Debug, Clone)]
pub struct Standing {
    pub principal: Principal,
    pub roles: Vec<Role>,
    pub restrictions: Restrictions,
    pub expires_at: Option<i64>,
}

impl Standing {
    /// The actor a token of `grant_id` with `scopes` acts as.
    pub fn actor(self, grant_id: &str, scopes: &ScopeSet) -> Actor {
        let mut restrictions = self.restrictions;
        restrictions.scopes = Some(scopes.clone());
        restrictions.grant = Some(grant_id.to_string());
        match self.principal {
            Principal::Key(key_id) => Actor::ApiKey {
                key_id,
                roles: self.roles,
                restrictions,
            },
            Principal::User(email) => Actor::User {
                email,
                roles: self.roles,
                restrictions,
            },
        }
    }
}

/// Re-reads a principal: a key must be live (not revoked, not expired), a
/// user must exist and be enabled. Each refusal has its own code and hint.
pub async fn stand(store: &Store, principal: &Principal) -> Result<Standing> {
    match principal {
        Principal::Key(id) => {
            let key = keys::recheck(store, id).await?;
            Ok(Standing {
                principal: Principal::Key(key.id),
                roles: key.roles,
                restrictions: key.restrictions,
                expires_at: key.expires_at,
            })
        }
        Principal::User(email) => {
            let user = users::get(store, email)
                .await?
                .ok_or_else(|| crate::access::actor::unknown_email(email))?;
            if user.is_disabled() {
                return Err(users::disabled_error(&user.email));
            }
            Ok(Standing {
                principal: Principal::User(user.email),
                roles: user.roles,
                restrictions: Restrictions::default(),
                expires_at: None,
            })
        }
    }
}

/// How long an access token works.
pub const ACCESS_TTL_MS: i64 = 3_600_000;
/// How long a refresh token works unused (each use rotates it).
pub const REFRESH_TTL_MS: i64 = 30 * 86_400_000;
/// How long an authorization code may wait for its exchange.
pub const CODE_TTL_MS: i64 = 60_000;
/// How long a consent page stays answerable.
pub const REQUEST_TTL_MS: i64 = 10 * 60_000;
/// How long a dynamic registration lives if no grant ever uses it.
pub const REGISTRATION_TTL_MS: i64 = 86_400_000;
/// Unused registrations held at once; a new one past this pushes out the oldest.
pub const MAX_UNUSED_REGISTRATIONS: i64 = 1_000;
/// Cached metadata documents no grant has used, held at once; the same rule.
pub const MAX_UNUSED_DOCUMENTS: i64 = 1_000;
/// Pending authorization requests held at once (each lives ten minutes);
/// a new one past this pushes out the oldest nobody began to answer.
pub const MAX_PENDING_REQUESTS: i64 = 1_000;

/// A secret handed out once (token, code, client secret); never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A fresh secret: `prefix` then 32 random bytes in base64url.
    pub fn generate(prefix: &str) -> Secret {
        let bytes: [u8; 32] = UnwrapErr(SysRng).random();
        Secret(format!(
            "{prefix}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        ))
    }

    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The text, for the one place that hands it out.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The stored form.
    pub fn hash(&self) -> String {
        hash(&self.0)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// SHA-256 in hex: the stored form of every OAuth secret.
pub fn hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A random identifier (request ids, and the tail of client and grant
/// ids): 16 bytes, base64url.
pub fn random_id() -> String {
    let bytes: [u8; 16] = UnwrapErr(SysRng).random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A new grant's id. An admin passes it to `gatehouse oauth revoke`, and one
/// bare base64url id in 64 begins with `-`, which a command line takes for an
/// option: the prefix keeps it an argument.
pub fn new_grant_id() -> String {
    format!("gr_{}", random_id())
}

/// Prefixes of what this module hands out, so a token is told from an API
/// key at a glance and by the log redaction.
pub const ACCESS_PREFIX: &str = "gatehouse_at_";
pub const REFRESH_PREFIX: &str = "gatehouse_rt_";
pub const CODE_PREFIX: &str = "gatehouse_ac_";
pub const CLIENT_SECRET_PREFIX: &str = "gatehouse_cs_";

/// An OAuth protocol error: a Gatehouse error whose detail names the RFC 6749
/// `error` value the HTTP adapter answers with.
pub fn oauth_error(code: Code, error: &str, message: impl Into<String>) -> Error {
    Error::new(code, message).detail(serde_json::json!({"error": error}))
}

/// The RFC 6749 `error` of an error from this module (`server_error` for
/// anything else, a storage failure say).
pub fn error_name(e: &Error) -> &str {
    e.detail
        .as_ref()
        .and_then(|d| d.get("error"))
        .and_then(|v| v.as_str())
        .unwrap_or("server_error")
}

/// The refusal of an action a token's scopes do not cover: it names every
/// scope the call needs (the token's own plus the missing one), which the
/// HTTP adapter puts in its 403 challenge.
pub fn insufficient_scope(held: &ScopeSet, action: Action) -> Error {
    let (message, needed) = match Scope::covering(action) {
        Some(s) => (
            format!(
                "{} needs the OAuth scope {s}, which this token was not granted",
                action.as_str()
            ),
            held.with(s),
        ),
        None => (
            format!("{} is never allowed to an OAuth token", action.as_str()),
            held.clone(),
        ),
    };
    Error::new(Code::OAUTH_SCOPE_INSUFFICIENT, message)
        .hint(format!(
            "authorize the client again with scope \"{needed}\" (the person approving must hold a key that allows it)"
        ))
        .detail(serde_json::json!({
            "error": "insufficient_scope",
            "action": action.as_str(),
            "scope": needed.to_string(),
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_never_debug_printed() {
        let a = Secret::generate(ACCESS_PREFIX);
        let b = Secret::generate(ACCESS_PREFIX);
        assert_ne!(a, b);
        assert!(a.expose().starts_with(ACCESS_PREFIX));
        assert_eq!(a.expose().len(), ACCESS_PREFIX.len() + 43);
        assert_eq!(format!("{a:?}"), "Secret(<redacted>)");
        assert_eq!(a.hash().len(), 64);
        assert_ne!(a.hash(), b.hash());
    }

    #[test]
    fn insufficient_scope_names_every_needed_scope() {
        let held = ScopeSet::parse("content:read").unwrap();
        let e = insufficient_scope(&held, Action::ContentPublish);
        assert_eq!(e.code, Code::OAUTH_SCOPE_INSUFFICIENT);
        assert_eq!(e.detail.unwrap()["scope"], "content:read content:publish");
    }
}
