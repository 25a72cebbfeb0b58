//! The site's key/value config: read by clients (permission-checked, secrets
//! redacted), changed by the admin surfaces (CLI, desktop app) with an audit
//! entry each, plus the few settings Gatehouse itself reads (such as the
//! `http_fetch` allowlist).
//!
//! A value is shown as `<redacted>` to a client when any of these holds: the
//! entry carries the `secret` flag (`gatehouse site config set --secret`), its
//! key names a secret (`password`, `token`, …), or the value itself is shaped
//! like one ([`secret_shaped`]: a URL with a password, a private key, a known
//! token format, a long random-looking string). The key-name rule alone let
//! `db.url`, `aws.private_key` and `stripe.sk` through.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::access::actor::Actor;
use crate::access::audit::AuditAction;
use crate::access::audit::{self, AuditEntry};
use crate::access::permissions::Action;
use crate::error::{Error, Result, codes};
use crate::store::{Store, site_config as sql};
use crate::time::now_ms;

/// The config key holding hosts `http_fetch` may reach despite the SSRF guard.
pub const HTTP_FETCH_ALLOWLIST: &str = "http_fetch.allowlist";

/// What a redacted value is shown as.
pub const REDACTED: &str = "<redacted>";

/// The longest value accepted (64 KiB).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Keys whose name says they hold a secret.
fn key_names_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "private_key",
        "credential",
        "dsn",
        "webhook",
    ]
    .iter()
    .any(|w| key.contains(w))
        // `smtp.pass`, `db.pw`: a short name as the key's last word.
        || key
            .rsplit(['.', '_', '-'])
            .next()
            .is_some_and(|last| matches!(last, "pass" | "pw" | "pwd" | "key" | "auth"))
}

/// Whether a value looks like a secret whatever its key is called.
pub fn secret_shaped(value: &str) -> bool {
    url_with_password(value)
        // `host=db password=…`, `…?password=…`: a field named as a credential.
        || crate::redact::redact_credentials(value) != value
        || (value.contains("-----BEGIN") && value.contains("PRIVATE KEY"))
        || value.split_whitespace().any(token_shaped)
}

fn url_with_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(pos) = rest.find("://") {
        let after = &rest[pos + 3..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#'))
            .unwrap_or(after.len());
        let authority = &after[..end];
        if let Some(at) = authority.rfind('@')
            && authority[..at].contains(':')
        {
            return true;
        }
        rest = after;
    }
    false
}

/// Known token formats, and long strings mixing upper case, lower case and
/// digits with nothing a word would have (what a generated secret looks like).
fn token_shaped(word: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk_live_",
        "sk_test_",
        "rk_live_",
        "rk_test_",
        "pk_live_",
        "whsec_",
        "sk-",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xoxa-",
        "xoxb-",
        "xoxp-",
        "xoxr-",
        "xoxs-",
        "npm_",
        "pypi-",
        "hf_",
        "shpat_",
        "shpss_",
        "gatehouse_sk_",
        "AKIA",
        "ASIA",
        "AIza",
        "SG.",
        "eyJ",
    ];
    let word = word.trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | ';'));
    if word.len() >= 16 && PREFIXES.iter().any(|p| word.starts_with(p)) {
        return true;
    }
    let charset_ok = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.'));
    charset_ok
        && word.len() >= 24
        && word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_digit())
}

fn must_redact(row: &sql::FlaggedRow) -> bool {
    row.secret || key_names_secret(&row.key) || secret_shaped(&row.value)
}

/// One entry as the admin surfaces show it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct ConfigEntry {
    pub key: String,
    /// `<redacted>` unless revealed.
    pub value: String,
    /// Marked secret by the admin.
    pub secret: bool,
    /// Hidden from clients (flagged, or shaped like a secret).
    pub redacted: bool,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub updated_at: i64,
}

fn entry(row: sql::FlaggedRow, reveal: bool) -> ConfigEntry {
    let redacted = must_redact(&row);
    ConfigEntry {
        value: if redacted && !reveal {
            REDACTED.to_string()
        } else {
            row.value
        },
        key: row.key,
        secret: row.secret,
        redacted,
        updated_at: row.updated_at,
    }
}

/// All config entries the actor may read, secret values redacted (the
/// `site_config_read` tool).
pub async fn read_all(store: &Store, actor: &Actor) -> Result<BTreeMap<String, String>> {
    actor.check(Action::SiteConfigRead)?;
    Ok(sql::all_flagged(store)
        .await?
        .into_iter()
        .map(|row| {
            let e = entry(row, false);
            (e.key, e.value)
        })
        .collect())
}

/// Every entry for the admin surfaces, secret values redacted.
pub async fn list(store: &Store) -> Result<Vec<ConfigEntry>> {
    Ok(sql::all_flagged(store)
        .await?
        .into_iter()
        .map(|r| entry(r, false))
        .collect())
}

fn not_found(key: &str) -> Error {
    Error::new(
        codes::SITE_CONFIG_KEY_NOT_FOUND,
        format!("no site config entry {key:?}"),
    )
    .hint("`gatehouse site config list` shows the keys")
}

/// One entry; `reveal` shows a secret value in clear (the admin's own terminal).
pub async fn get(store: &Store, key: &str, reveal: bool) -> Result<ConfigEntry> {
    sql::all_flagged(store)
        .await?
        .into_iter()
        .find(|r| r.key == key)
        .map(|r| entry(r, reveal))
        .ok_or_else(|| not_found(key))
}

/// Keys are 1–100 characters of lowercase letters, digits, `.`, `_` and `-`.
pub fn check_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && key.len() <= 100
        && key.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::SITE_CONFIG_KEY_INVALID,
            format!("{key:?} is not a valid config key"),
            "use lowercase letters, digits, dots, dashes and underscores, e.g. http_fetch.allowlist",
        ))
    }
}

/// Sets an entry (creating or replacing it) and records who did; the audit
/// entry never holds the value, only whether it is marked secret. `secret`:
/// mark it (`Some(true)`), unmark it (`Some(false)`), or keep what the entry
/// was (`None`; a new one is not secret): a secret set again without the
/// flag, as when it is rotated, had become readable to every editor.
pub async fn set(
    store: &Store,
    actor: &str,
    key: &str,
    value: &str,
    secret: Option<bool>,
) -> Result<ConfigEntry> {
    check_key(key)?;
    if value.len() > MAX_VALUE_BYTES || value.contains('\0') {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "the value is longer than 64 KiB or contains a NUL character",
            "config values are short text",
        ));
    }
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let secret = match secret {
        Some(flag) => flag,
        None => sql::secret_in(&mut tx, key).await?.unwrap_or(false),
    };
    sql::set_flagged(&mut tx, key, value, secret, now).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::SiteConfigSet,
            subject: key,
            detail: serde_json::json!({"secret": secret}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a config change", e))?;
    get(store, key, false).await
}

/// Removes an entry, with its audit entry.
pub async fn unset(store: &Store, actor: &str, key: &str) -> Result<()> {
    let mut tx = store.begin_write().await?;
    if !sql::unset(&mut tx, key).await? {
        return Err(not_found(key));
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::SiteConfigUnset,
            subject: key,
            detail: serde_json::json!({}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a config change", e))?;
    Ok(())
}

/// The `http_fetch` allowlist: lowercase host names, from a comma-separated value.
pub async fn http_fetch_allowlist(store: &Store) -> Result<Vec<String>> {
    Ok(parse_list(
        &sql::get(store, HTTP_FETCH_ALLOWLIST)
            .await?
            .unwrap_or_default(),
    ))
}

fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_is_a_trimmed_lowercase_list() {
        assert_eq!(
            parse_list(" Example.COM, ,internal.test.,"),
            vec!["example.com", "internal.test"]
        );
        assert!(parse_list("").is_empty());
    }

    #[test]
    fn secret_keys_are_recognised() {
        assert!(key_names_secret("smtp.password"));
        assert!(key_names_secret("webhook.TOKEN"));
        for key in [
            "smtp.pass",
            "db.pw",
            "db.dsn2",
            "slack.webhook_url",
            "stripe.key",
        ] {
            assert!(key_names_secret(key), "{key}");
        }
        assert!(!key_names_secret("site.title"));
        assert!(!key_names_secret("site.passage"));
    }

    #[test]
    fn secret_values_are_recognised_whatever_the_key() {
        for secret in [
            "postgres://app:hunter2@db.internal:5432/site",
            "see https://user:pw@example.com/x",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----",
            "sk_live_51H8sV2Kq0aZbYcXdWeVf",
            "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
            "github_pat_11ABCDEFG0123456789_abcdef",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefghijkl",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
            "Zx8qR2vT9mLp4WcN7bYk3HsJ",
            "mysql://app@db.internal/site?password=hunter2",
            "host=db user=app password=hunter2 dbname=site",
        ] {
            assert!(secret_shaped(secret), "{secret}");
        }
        for plain in [
            "My little site",
            "https://example.com/path?q=1",
            "ssh://git@github.com/org/repo",
            "example.com, internal.test:8080",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "true",
            "Europe/Berlin",
        ] {
            assert!(!secret_shaped(plain), "{plain}");
        }
    }
}
