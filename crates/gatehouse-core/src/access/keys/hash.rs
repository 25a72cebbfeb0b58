//! argon2id hashing of a key's secret, and verification that costs the same
//! whether or not the key id exists.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};

use super::format::{RawKey, generate, parse};
use crate::error::{Error, Result, codes};

fn hasher() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("valid argon2 params");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes a secret (blocking: call from `spawn_blocking`).
pub(super) fn hash_secret(secret: &str) -> Result<String> {
    // The salt comes from the OS CSPRNG (password-hash's `getrandom` feature).
    hasher()
        .hash_password(secret.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| Error::new(codes::KEY_VERIFY_FAILED, format!("hashing failed: {e}")))
}

/// What argon2 said about a secret.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum SecretCheck {
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
pub(super) fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$KNs4jIF0ND3q2ujT/i4hew$3bcvdFMRhIKwysa4TW5Nr4mqvm/JDjM1kVPbz2d77Hw"
}

pub(super) fn verify_secret(secret: &str, phc: &str) -> Result<SecretCheck> {
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

/// Argon2 runs at once in this process, at most: each holds its 19 MiB of
/// blocks, and calls beyond the cores only queue for them anyway. Without a
/// bound, a hundred requests with made-up keys at once (each must be
/// verified, an unknown id against the dummy hash included) took a server
/// to 2 GB.
const MAX_CONCURRENT_HASHES: usize = 4;

/// Runs `f` (an argon2 hash or verification) on the blocking pool, once one
/// of the [`MAX_CONCURRENT_HASHES`] slots is free.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CONCURRENT_HASHES);
    let slot = SLOTS.acquire().await.expect("the slots are never closed");
    // The slot goes with the work: a caller that stops waiting does not
    // free it while argon2 still runs.
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        f()
    })
    .await
    .map_err(|e| {
        Error::new(
            codes::KEY_VERIFY_FAILED,
            format!("hashing task failed: {e}"),
        )
    })?
}

/// A new key with the argon2id hash of its secret (hashed off the runtime).
pub(super) async fn fresh_key() -> Result<(String, RawKey, String)> {
    let (id, key) = generate();
    let secret = parse(key.expose())
        .map(|p| p.secret.to_string())
        .expect("a generated key parses");
    let hash = blocking(move || hash_secret(&secret)).await?;
    Ok((id, key, hash))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Checked with argon2 itself: `verify_secret` moves the counter that
        // verify's test reads (its Match and WrongSecret are pinned there).
        let parsed = PasswordHash::new(&phc).unwrap();
        assert!(hasher().verify_password(b"s3cret", &parsed).is_ok());
        assert!(hasher().verify_password(b"s3cres", &parsed).is_err());
    }
}
