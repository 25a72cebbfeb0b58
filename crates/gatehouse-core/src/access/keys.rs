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

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngExt;
use rand::distr::Alphanumeric;
use rand::rand_core::UnwrapErr;
use rand::rngs::SysRng;
use serde::Serialize;
use tracing::instrument;

use crate::access::audit::{self, Entry};
use crate::access::permissions::{Role, format_roles, parse_roles};
use crate::error::{Error, Result, codes};
use crate::store::keys::{self as sql, KeyRow};
use crate::store::{Store, now_ms};

pub const PREFIX: &str = "gatehouse_sk_";
pub const ID_LEN: usize = 12;
pub const SECRET_LEN: usize = 33;
pub const CHECKSUM_LEN: usize = 6;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A raw API key. It never prints: `Debug` and `Display` show only the key id.
#[derive(Clone, PartialEq, Eq)]
pub struct RawKey(String);

impl RawKey {
    pub fn new(raw: impl Into<String>) -> RawKey {
        RawKey(raw.into())
    }
    /// The raw text, for the one place that must show it (mint output).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for RawKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RawKey(<redacted>)")
    }
}

/// A key split into its parts after the format and checksum were checked.
#[derive(Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    pub id: &'a str,
    secret: &'a str,
}

/// Why a key string was refused before the store was consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    Prefix,
    Shape,
    Checksum,
}

fn base62_fixed(mut n: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out).expect("base62 is ASCII")
}

/// The checksum of the text before it.
pub fn checksum(body: &str) -> String {
    base62_fixed(u64::from(crc32fast::hash(body.as_bytes())), CHECKSUM_LEN)
}

/// Checks format and checksum. Never panics, whatever the input.
pub fn parse(raw: &str) -> std::result::Result<ParsedKey<'_>, Malformed> {
    let rest = raw.strip_prefix(PREFIX).ok_or(Malformed::Prefix)?;
    let alnum = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
    if rest.len() != ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN || !rest.is_char_boundary(ID_LEN) {
        return Err(Malformed::Shape);
    }
    let (id, tail) = rest.split_at(ID_LEN);
    let tail = tail.strip_prefix('_').ok_or(Malformed::Shape)?;
    if !alnum(id) || !alnum(tail) {
        return Err(Malformed::Shape);
    }
    let (secret, sum) = tail.split_at(SECRET_LEN);
    let body = &raw[..raw.len() - CHECKSUM_LEN];
    if checksum(body) != sum {
        return Err(Malformed::Checksum);
    }
    Ok(ParsedKey { id, secret })
}

fn random_base62(len: usize) -> String {
    // Alphanumeric samples the 62 characters uniformly (rejection sampling).
    // SysRng is the OS CSPRNG; a failing OS RNG is a panic, as OsRng's was.
    UnwrapErr(SysRng)
        .sample_iter(Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// Generates a fresh raw key and returns it with its id.
pub fn generate() -> (String, RawKey) {
    let id = random_base62(ID_LEN);
    let body = format!("{PREFIX}{id}_{}", random_base62(SECRET_LEN));
    let raw = format!("{body}{}", checksum(&body));
    (id, RawKey(raw))
}

fn hasher() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("valid argon2 params");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes a secret (blocking: call from `spawn_blocking`).
fn hash_secret(secret: &str) -> Result<String> {
    // The salt comes from the OS CSPRNG (password-hash's `getrandom` feature).
    hasher()
        .hash_password(secret.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| Error::new(codes::KEY_VERIFY_FAILED, format!("hashing failed: {e}")))
}

/// What argon2 said about a secret.
#[derive(Debug, PartialEq, Eq)]
enum SecretCheck {
    Match,
    WrongSecret,
}

/// How many argon2 verifications this process has run. Verification must cost
/// the same whether or not the key id exists (see [`verify`]); tests read this
/// to check that an unknown id is still verified, against [`dummy_hash`].
static VERIFICATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn argon2_verifications() -> u64 {
    VERIFICATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The hash of a random, discarded secret with the real parameters: an
/// unknown key id is verified against it so the refusal takes as long as a
/// wrong secret. A constant, so not even the first refusal pays for hashing.
fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$KNs4jIF0ND3q2ujT/i4hew$3bcvdFMRhIKwysa4TW5Nr4mqvm/JDjM1kVPbz2d77Hw"
}

fn verify_secret(secret: &str, phc: &str) -> Result<SecretCheck> {
    VERIFICATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let parsed = PasswordHash::new(phc).map_err(|e| {
        tracing::error!(error = %e, "stored key hash is not a valid PHC string");
        Error::new(
            codes::KEY_VERIFY_FAILED,
            "the stored hash of this key is damaged",
        )
        .hint("revoke the key and mint a new one")
    })?;
    match hasher().verify_password(secret.as_bytes(), &parsed) {
        Ok(()) => Ok(SecretCheck::Match),
        Err(argon2::password_hash::Error::PasswordInvalid) => Ok(SecretCheck::WrongSecret),
        Err(e) => Err(Error::new(
            codes::KEY_VERIFY_FAILED,
            format!("key verification failed: {e}"),
        )),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Error::new(
            codes::KEY_VERIFY_FAILED,
            format!("hashing task failed: {e}"),
        )
    })?
}

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
    crate::text::check_no_bidi(
        "key label",
        label,
        codes::LABEL_INVALID,
        "retype the label without direction-changing characters",
    )?;
    Ok(label.to_string())
}

/// Mints a key. The key row and its audit entry commit together.
#[instrument(skip_all, fields(label))]
pub async fn mint(
    store: &Store,
    actor: &str,
    label: &str,
    roles: &[Role],
    expires_at: Option<i64>,
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
    let (id, key) = generate();
    let secret = parse(key.expose())
        .map(|p| p.secret.to_string())
        .expect("a generated key parses");
    let hash = blocking(move || hash_secret(&secret)).await?;
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
    };
    let mut tx = store.begin_write().await?;
    sql::insert(&mut tx, &row).await?;
    audit::append(
        &mut tx,
        Entry {
            actor,
            action: "key.mint",
            subject: &id,
            detail: serde_json::json!({"label": label, "roles": row.roles, "expires_at": expires_at}),
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
        Entry {
            actor,
            action: "key.revoke",
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
    let (new_id, key) = generate();
    let secret = parse(key.expose())
        .map(|p| p.secret.to_string())
        .expect("a generated key parses");
    let hash = blocking(move || hash_secret(&secret)).await?;
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
        Entry {
            actor,
            action: "key.roll",
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
    })
}

/// Parses an expiry: a duration from now (`30d`, `12h`) or an RFC 3339 time.
pub fn parse_expiry(text: &str, now_ms: i64) -> Result<i64> {
    if let Ok(at) =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    {
        return Ok((at.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    match parse_duration_ms(text) {
        Ok(d) => after(now_ms, d),
        Err(e) if e.message.contains("too long") => Err(e),
        Err(_) => Err(Error::invalid(
            codes::EXPIRY_INVALID,
            format!("cannot read expiry {text:?}"),
            "give a duration such as 30d, 12h, 90m, or an RFC 3339 time such as 2027-01-31T00:00:00Z",
        )),
    }
}

/// The longest duration accepted anywhere (36500 days, about 100 years): long enough for any
/// real expiry or grace period, short enough that "now + duration" can never
/// overflow a millisecond timestamp.
pub const MAX_DURATION_MS: i64 = 36_500 * 24 * 60 * 60 * 1000;

/// Parses a duration such as `24h`, `30d` or `90s` into milliseconds; one
/// longer than [`MAX_DURATION_MS`] is refused rather than overflowing later.
pub fn parse_duration_ms(text: &str) -> Result<i64> {
    let ms = humantime::parse_duration(text.trim())
        .ok()
        .map(|d| d.as_millis())
        .ok_or_else(|| {
            Error::invalid(
                codes::DURATION_INVALID,
                format!("cannot read duration {text:?}"),
                "use forms such as 30s, 15m, 24h, 30d",
            )
        })?;
    i64::try_from(ms)
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(|| {
            Error::invalid(
                codes::DURATION_INVALID,
                format!("the duration {:?} is too long", text.trim()),
                "durations are at most 100 years (36500d)",
            )
        })
}

pub use crate::time::rfc3339;

/// `now + duration`, refused instead of overflowing.
pub fn after(now_ms: i64, duration_ms: i64) -> Result<i64> {
    now_ms.checked_add(duration_ms).ok_or_else(|| {
        Error::invalid(
            codes::DURATION_INVALID,
            "the duration reaches past the last representable time",
            "durations are at most 100 years (36500d)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_keys_round_trip() {
        let (id, key) = generate();
        let parsed = parse(key.expose()).unwrap();
        assert_eq!(parsed.id, id);
        assert_eq!(
            key.expose().len(),
            PREFIX.len() + ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN
        );
        assert!(key.expose().starts_with("gatehouse_sk_"));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let (_, key) = generate();
        assert_eq!(format!("{key:?}"), "RawKey(<redacted>)");
    }

    #[test]
    fn checksum_is_checked() {
        let (_, key) = generate();
        let mut s = key.expose().to_string();
        let last = s.pop().unwrap();
        s.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(parse(&s), Err(Malformed::Checksum));
        assert_eq!(parse("gatehouse_sk_"), Err(Malformed::Shape));
        assert_eq!(parse("sk_live_123"), Err(Malformed::Prefix));
    }

    #[test]
    fn two_keys_differ() {
        assert_ne!(generate().1, generate().1);
    }

    #[test]
    fn expiry_forms() {
        assert_eq!(parse_expiry("30d", 0).unwrap(), 30 * 86_400_000);
        assert_eq!(parse_expiry("1970-01-01T00:00:01Z", 0).unwrap(), 1000);
        assert_eq!(
            parse_expiry("soon", 0).unwrap_err().code,
            codes::EXPIRY_INVALID
        );
    }

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

    #[test]
    fn the_dummy_hash_has_the_real_parameters() {
        let parsed = PasswordHash::new(dummy_hash()).unwrap();
        let params = Params::try_from(&parsed).unwrap();
        let real = hasher();
        assert_eq!(params.m_cost(), real.params().m_cost());
        assert_eq!(params.t_cost(), real.params().t_cost());
        assert_eq!(params.p_cost(), real.params().p_cost());
        assert_eq!(parsed.algorithm, Algorithm::Argon2id.ident());
    }

    #[test]
    fn argon2_params_are_owasp() {
        let phc = hash_secret("s3cret").unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert_eq!(verify_secret("s3cret", &phc).unwrap(), SecretCheck::Match);
        assert_eq!(
            verify_secret("s3cres", &phc).unwrap(),
            SecretCheck::WrongSecret
        );
    }

    proptest! {
        #[test]
        fn parser_never_panics(s in "\\PC*") {
            let _ = parse(&s);
        }

        #[test]
        fn parser_never_panics_on_near_keys(tail in "[A-Za-z0-9_]{0,60}") {
            let _ = parse(&format!("{PREFIX}{tail}"));
        }

        #[test]
        fn every_single_character_change_is_refused(pos in 0usize..(PREFIX.len() + ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN), c in proptest::char::any()) {
            let (_, key) = generate();
            let original = key.expose();
            let mut chars: Vec<char> = original.chars().collect();
            prop_assume!(chars[pos] != c);
            chars[pos] = c;
            let changed: String = chars.into_iter().collect();
            prop_assert!(parse(&changed).is_err(), "accepted {changed:?}");
        }
    }
}
