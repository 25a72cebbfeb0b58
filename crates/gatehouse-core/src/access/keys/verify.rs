//! A presented key: verified once (argon2), then rechecked on every call.

use serde::Serialize;
use tracing::instrument;

use super::format::{RawKey, parse};
use super::hash::{SecretCheck, blocking, dummy_hash, verify_secret};
use crate::access::permissions::{Role, parse_roles};
use crate::access::restrictions::Restrictions;
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::keys::{self as sql, KeyRow};
use crate::time::now_ms;

/// Why a presented key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Refusal {
    Malformed,
    Unknown,
    Revoked,
    Expired,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Malformed => "malformed",
            Refusal::Unknown => "unknown",
            Refusal::Revoked => "revoked",
            Refusal::Expired => "expired",
        }
    }

    /// The `ACTOR_API_KEY_INVALID` error for this refusal.
    pub fn error(self, key_id: Option<&str>) -> Error {
        let (message, hint) = match self {
            Refusal::Malformed => (
                "the API key is malformed (wrong prefix, length or checksum)".to_string(),
                "copy the whole key as printed by `gatehouse keys mint`; it starts with gatehouse_sk_",
            ),
            Refusal::Unknown => (
                format!(
                    "no key matches{}",
                    key_id.map(|i| format!(" (key id {i})")).unwrap_or_default()
                ),
                "check the site (--site) or mint a key with `gatehouse keys mint`",
            ),
            Refusal::Revoked => (
                format!("key {} has been revoked", key_id.unwrap_or("?")),
                "mint a new key with `gatehouse keys mint`",
            ),
            Refusal::Expired => (
                format!("key {} has expired", key_id.unwrap_or("?")),
                "mint a new key, or roll keys before they expire with `gatehouse keys roll`",
            ),
        };
        let mut detail = serde_json::json!({"reason": self.as_str()});
        if let Some(id) = key_id {
            detail["key_id"] = serde_json::json!(id);
        }
        Error::new(codes::ACTOR_API_KEY_INVALID, message)
            .hint(hint)
            .detail(detail)
    }
}

/// A key that passed verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedKey {
    pub id: String,
    pub roles: Vec<Role>,
    /// When it stops working, if ever (a cached actor must stop then too).
    pub expires_at: Option<i64>,
    /// What it may do beyond its roles, narrowed.
    pub restrictions: Restrictions,
}

/// Verifies a presented key: parse and checksum, look up by id, argon2 verify,
/// then refuse if revoked or expired — each with its own reason.
#[instrument(skip_all, fields(key_id))]
pub async fn verify(store: &Store, raw: &RawKey) -> Result<VerifiedKey> {
    let parsed = parse(raw.expose()).map_err(|_| Refusal::Malformed.error(None))?;
    tracing::Span::current().record("key_id", parsed.id);
    let row = sql::get(store, parsed.id).await?;
    let secret = parsed.secret.to_string();
    // An unknown id is verified too (against a dummy hash), so whether an id
    // exists does not show in how long the refusal takes.
    let phc = row.as_ref().map(|r| r.hash.clone());
    let check = blocking(move || match phc {
        Some(phc) => verify_secret(&secret, &phc),
        None => verify_secret(&secret, dummy_hash()).map(|_| SecretCheck::WrongSecret),
    })
    .await?;
    let row = match row {
        Some(row) if check == SecretCheck::Match => row,
        _ => {
            tracing::info!("no key matches");
            return Err(Refusal::Unknown.error(Some(parsed.id)));
        }
    };
    let now = now_ms();
    check_state(&row, now)?;
    sql::touch(store, &row.id, now).await?;
    Ok(VerifiedKey {
        id: row.id.clone(),
        roles: parse_roles(&row.roles)?,
        expires_at: row.expires_at,
        restrictions: Restrictions::from_stored(row.restrictions.as_deref())?,
    })
}

fn check_state(row: &KeyRow, now: i64) -> Result<()> {
    if row.revoked_at.is_some() {
        return Err(Refusal::Revoked.error(Some(&row.id)));
    }
    if row.expires_at.is_some_and(|e| e <= now) {
        return Err(Refusal::Expired.error(Some(&row.id)));
    }
    Ok(())
}

/// Re-reads an already verified key (no argon2): its current roles, or the
/// refusal if it was revoked or expired since. Used on every call of a
/// long-running server.
pub async fn recheck(store: &Store, id: &str) -> Result<VerifiedKey> {
    let row = sql::get(store, id)
        .await?
        .ok_or_else(|| Refusal::Unknown.error(Some(id)))?;
    check_state(&row, now_ms())?;
    Ok(VerifiedKey {
        id: row.id.clone(),
        roles: parse_roles(&row.roles)?,
        expires_at: row.expires_at,
        restrictions: Restrictions::from_stored(row.restrictions.as_deref())?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{PREFIX, SECRET_LEN, argon2_verifications, checksum, generate, mint};
    use super::*;

    /// The only test in this binary that verifies keys, so the process-wide
    /// counter moves for it alone.
    #[tokio::test]
    async fn unknown_key_ids_cost_an_argon2_verification_like_wrong_secrets() {
        let tmp = tempfile::tempdir().unwrap();
        let site = crate::site::init(&tmp.path().join("s"), Some("t"), false, None)
            .await
            .unwrap();
        let minted = mint(&site.store, "test", "k", &[Role::Viewer], None)
            .await
            .unwrap();
        let id = &minted.info.id;
        let wrong = {
            let body = format!("{PREFIX}{id}_{}", "A".repeat(SECRET_LEN));
            RawKey::new(format!("{body}{}", checksum(&body)))
        };
        let (_, unknown) = generate();
        let before = argon2_verifications();
        let e = verify(&site.store, &wrong).await.unwrap_err();
        assert_eq!(e.detail.unwrap()["reason"], "unknown");
        assert_eq!(argon2_verifications(), before + 1);
        let e = verify(&site.store, &unknown).await.unwrap_err();
        assert_eq!(e.detail.unwrap()["reason"], "unknown");
        assert_eq!(
            argon2_verifications(),
            before + 2,
            "an unknown key id must be verified too (against the dummy hash)"
        );
        assert!(verify(&site.store, &minted.key).await.is_ok());
        site.store.close().await;
    }
}
