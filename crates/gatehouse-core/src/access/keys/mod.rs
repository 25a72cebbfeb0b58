//! API keys: `gatehouse_sk_<key id>_<secret><checksum>`.
//!
//! - The key id (12 base62 characters) is public: it is shown in lists, used to
//!   revoke, and is the index a key is looked up by, so verification costs one
//!   indexed read and one argon2 verification however many keys exist.
//! - The secret is 33 base62 characters drawn uniformly from the OS CSPRNG
//!   (196 bits, more than the 192 required).
//! - The checksum is the CRC32 of everything before it, as 6 base62 characters,
//!   so a mistyped key is refused without touching the store and secret
//!   scanners can recognise the format.
//!
//! Only an argon2id PHC hash of the secret is stored (m = 19456 KiB, t = 2, p = 1,
//! the OWASP minimum). The raw key exists in [`RawKey`], whose `Debug` redacts it,
//! and is handed back once, by [`mint`].

//!
//! Map: [`format`] (the key's text: generate, parse, checksum), [`hash`]
//! (argon2id, and the same cost for an unknown id), here the key's life
//! (mint, list, revoke, roll), [`verify`](mod@verify) (a presented key, and the
//! per-call recheck), [`cache`] (verified keys remembered by the HTTP server), [`expiry`] (expiries and durations as written).

mod cache;
mod expiry;
mod format;
mod hash;
mod verify;

pub use cache::{CheckedKey, VerifyCache};
pub use expiry::{MAX_DURATION_MS, after, parse_duration_ms, parse_expiry, rfc3339};
pub use format::{
    CHECKSUM_LEN, ID_LEN, Malformed, PREFIX, ParsedKey, RawKey, SECRET_LEN, checksum, generate,
    is_key_id, parse,
};
pub use hash::argon2_verifications;
pub use verify::{Refusal, VerifiedKey, recheck, verify};

use serde::Serialize;
use tracing::instrument;

use crate::access::audit::AuditAction;
use crate::access::audit::{self, AuditEntry};
use crate::access::permissions::{Role, format_roles, parse_roles};
use crate::access::restrictions::Restrictions;
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::keys::{self as sql, KeyRow};
use crate::time::now_ms;

/// A key as shown in lists: everything but the secret. Times are Unix
/// milliseconds here and RFC 3339 text when serialized.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct KeyInfo {
    pub id: String,
    pub label: String,
    pub roles: Vec<Role>,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub created_at: i64,
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub expires_at: Option<i64>,
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub last_used_at: Option<i64>,
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub revoked_at: Option<i64>,
    pub replaced_by: Option<String>,
    /// At the time of listing.
    pub status: KeyStatus,
    /// What the key may do beyond its roles, narrowed (empty: nothing more).
    pub restrictions: Restrictions,
}

/// Whether a key works, at the time it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::Display, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum KeyStatus {
    Active,
    Revoked,
    Expired,
}

impl KeyInfo {
    fn from_row(row: KeyRow, now: i64) -> Result<KeyInfo> {
        let status = if row.revoked_at.is_some() {
            KeyStatus::Revoked
        } else if row.expires_at.is_some_and(|e| e <= now) {
            KeyStatus::Expired
        } else {
            KeyStatus::Active
        };
        Ok(KeyInfo {
            roles: parse_roles(&row.roles)?,
            id: row.id,
            label: row.label,
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
            revoked_at: row.revoked_at,
            replaced_by: row.replaced_by,
            status,
            restrictions: Restrictions::from_stored(row.restrictions.as_deref())?,
        })
    }
}

/// The result of a mint: the raw key, shown once.
#[derive(Debug, Clone)]
pub struct Minted {
    pub key: RawKey,
    pub info: KeyInfo,
}

fn check_label(label: &str) -> Result<String> {
    let label = label.trim();
    if label.is_empty() || label.chars().count() > 100 || label.chars().any(char::is_control) {
        return Err(Error::invalid(
            codes::LABEL_INVALID,
            "a key label must be 1 to 100 printable characters",
            "name the key after the client that will use it, e.g. --label \"claude desktop (laptop)\"",
        ));
    }
    crate::text::check_no_disguise(
        "key label",
        label,
        codes::LABEL_INVALID,
        "retype the label without direction-changing or invisible characters",
    )?;
    Ok(label.to_string())
}

/// Mints a key restricted by its roles alone.
pub async fn mint(
    store: &Store,
    actor: &str,
    label: &str,
    roles: &[Role],
    expires_at: Option<i64>,
) -> Result<Minted> {
    mint_restricted(
        store,
        actor,
        label,
        roles,
        expires_at,
        &Restrictions::default(),
    )
    .await
}

/// Mints a key. The key row and its audit entry commit together.
#[instrument(skip_all, fields(label))]
pub async fn mint_restricted(
    store: &Store,
    actor: &str,
    label: &str,
    roles: &[Role],
    expires_at: Option<i64>,
    restrictions: &Restrictions,
) -> Result<Minted> {
    let label = check_label(label)?;
    if roles.is_empty() {
        return Err(parse_roles("").unwrap_err());
    }
    let now = now_ms();
    if let Some(at) = expires_at
        && at <= now
    {
        return Err(Error::invalid(
            codes::EXPIRY_INVALID,
            "the expiry is in the past",
            "give a future time or a duration such as 30d",
        ));
    }
    let (id, key, hash) = hash::fresh_key().await?;
    let row = KeyRow {
        id: id.clone(),
        label: label.clone(),
        roles: format_roles(roles),
        hash,
        created_at: now,
        expires_at,
        last_used_at: None,
        revoked_at: None,
        replaced_by: None,
        restrictions: restrictions.to_stored(),
    };
    let mut tx = store.begin_write().await?;
    sql::insert(&mut tx, &row).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::KeyMint,
            subject: &id,
            detail: serde_json::json!({"label": label, "roles": row.roles, "expires_at": expires_at, "restrictions": restrictions_json(restrictions)}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a new key", e))?;
    Ok(Minted {
        key,
        info: KeyInfo::from_row(row, now)?,
    })
}

pub async fn list(store: &Store) -> Result<Vec<KeyInfo>> {
    let now = now_ms();
    sql::list(store)
        .await?
        .into_iter()
        .map(|r| KeyInfo::from_row(r, now))
        .collect()
}

fn not_found(id: &str) -> Error {
    Error::new(codes::KEY_NOT_FOUND, format!("no key with id {id:?}"))
        .hint("`gatehouse keys list` shows the ids (the part after gatehouse_sk_)")
}

/// Revokes a key now; takes effect on its next use in every process.
pub async fn revoke(store: &Store, actor: &str, id: &str) -> Result<KeyInfo> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    if !sql::revoke(&mut tx, id, now).await? {
        return Err(match sql::get_in(&mut tx, id).await? {
            Some(_) => Error::new(
                codes::KEY_ALREADY_REVOKED,
                format!("key {id} is already revoked"),
            )
            .hint("nothing to do"),
            None => not_found(id),
        });
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::KeyRevoke,
            subject: id,
            detail: serde_json::json!({}),
        },
    )
    .await?;
    let row = sql::get_in(&mut tx, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a revocation", e))?;
    KeyInfo::from_row(row, now)
}

/// Mints a replacement with the same label and roles; the old key expires
/// after `grace_ms` (or sooner, if it already expired sooner).
pub async fn roll(store: &Store, actor: &str, id: &str, grace_ms: i64) -> Result<Minted> {
    let old = sql::get(store, id).await?.ok_or_else(|| not_found(id))?;
    if old.revoked_at.is_some() {
        return Err(Error::new(
            codes::KEY_ALREADY_REVOKED,
            format!("key {id} is revoked and cannot be rolled"),
        )
        .hint("mint a new key with `gatehouse keys mint`"));
    }
    let now = now_ms();
    let (new_id, key, hash) = hash::fresh_key().await?;
    let row = KeyRow {
        id: new_id.clone(),
        label: old.label.clone(),
        roles: old.roles.clone(),
        hash,
        created_at: now,
        expires_at: None,
        last_used_at: None,
        revoked_at: None,
        replaced_by: None,
        // A roll never sheds a restriction.
        restrictions: old.restrictions.clone(),
    };
    if !(0..=MAX_DURATION_MS).contains(&grace_ms) {
        return Err(Error::invalid(
            codes::DURATION_INVALID,
            "the grace period is out of range",
            "grace periods are between 0 and 100 years (36500d)",
        ));
    }
    let until = after(now, grace_ms)?;
    let old_expires = old.expires_at.map_or(until, |e| e.min(until));
    let mut tx = store.begin_write().await?;
    // Re-read under the lock: a concurrent revoke must win over a roll.
    match sql::get_in(&mut tx, id).await? {
        Some(current) if current.revoked_at.is_none() => {}
        _ => {
            return Err(Error::new(
                codes::KEY_ALREADY_REVOKED,
                format!("key {id} was revoked meanwhile"),
            ));
        }
    }
    sql::insert(&mut tx, &row).await?;
    sql::retire(&mut tx, id, old_expires, &new_id).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::KeyRoll,
            subject: id,
            detail: serde_json::json!({"replaced_by": new_id, "old_expires_at": old_expires}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a key roll", e))?;
    Ok(Minted {
        key,
        info: KeyInfo::from_row(row, now)?,
    })
}

/// Restrictions as the audit log records them: `null` for none.
fn restrictions_json(r: &Restrictions) -> serde_json::Value {
    if r.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::to_value(r).expect("restrictions serialise")
    }
}

/// Changes a key's restrictions: `change` gets the current set and returns
/// the new one (empty lifts them all), read and written in one transaction.
/// Takes effect on the key's next call in every process; audited with the
/// old and the new set.
pub async fn restrict(
    store: &Store,
    actor: &str,
    id: &str,
    change: impl FnOnce(Restrictions) -> Result<Restrictions>,
) -> Result<KeyInfo> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let old = sql::get_in(&mut tx, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    if old.revoked_at.is_some() {
        return Err(Error::new(
            codes::KEY_ALREADY_REVOKED,
            format!("key {id} is revoked; its restrictions no longer matter"),
        )
        .hint("mint a new key with `gatehouse keys mint`"));
    }
    let before = Restrictions::from_stored(old.restrictions.as_deref())?;
    let restrictions = &change(before.clone())?;
    sql::set_restrictions(&mut tx, id, restrictions.to_stored().as_deref()).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::KeyRestrict,
            subject: id,
            detail: serde_json::json!({
                "restrictions": restrictions_json(restrictions),
                "before": restrictions_json(&before),
            }),
        },
    )
    .await?;
    let row = sql::get_in(&mut tx, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing key restrictions", e))?;
    KeyInfo::from_row(row, now)
}
