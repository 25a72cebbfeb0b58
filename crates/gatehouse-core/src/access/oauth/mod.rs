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
//! A grant always acts as an API key's actor (the key pasted on the consent
//! page), narrowed to the grant's scopes ([`scope::ScopeSet`] in the actor's
//! restrictions). The key is re-read on every request: revoking or expiring
//! it ends the grant.
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

use crate::access::permissions::Action;
use crate::error::{Code, Error};
pub use scope::{Scope, ScopeSet};

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
/// Unused registrations held at once; more are refused until some lapse.
pub const MAX_UNUSED_REGISTRATIONS: i64 = 1_000;

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

/// A random identifier (grant and request ids): 16 bytes, base64url.
pub fn random_id() -> String {
    let bytes: [u8; 16] = UnwrapErr(SysRng).random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
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
