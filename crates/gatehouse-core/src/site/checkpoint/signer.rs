//! This machine's audit signing key (kept by [`SecretStore`]: the system's
//! credential store, or a 0600 file beside the anchors) and the signatures a
//! checkpoint or a site export carries.

use std::path::Path;

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier, VerifyingKey};

use super::FORMAT;
use crate::error::{Error, Result, codes};
use crate::secret_store::{Place, SecretStore};
use crate::store::checkpoints::CheckpointRow;
use crate::time::now_ms;

/// The key's name: its file in the config directory, or its account in the
/// credential store.
pub const KEY_FILE: &str = "audit-signing-key";

/// This machine's signing key.
pub struct Signer {
    key: SigningKey,
    place: Option<Place>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer(public {})", self.public_hex())
    }
}

fn parse(stored: crate::secret_store::Stored) -> Result<Signer> {
    let bytes: [u8; 32] = hex::decode(stored.secret.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            Error::new(
                codes::AUDIT_KEY_INVALID,
                format!("the audit signing key in {} is not a key Gatehouse wrote", stored.place),
            )
            .hint("the key signs audit checkpoints; move it away to start a new one (old checkpoints then count as another machine's)")
        })?;
    Ok(Signer {
        key: SigningKey::from_bytes(&bytes),
        place: Some(stored.place),
    })
}

impl Signer {
    /// The key of config directory `dir`, if one was ever made.
    pub fn load(dir: &Path) -> Result<Option<Signer>> {
        SecretStore::for_config_dir(dir)?
            .load(KEY_FILE)?
            .map(parse)
            .transpose()
    }

    /// The key of `dir`, made on first use where [`SecretStore`] puts new
    /// secrets. Two processes starting at once agree on one key.
    pub fn load_or_create(dir: &Path) -> Result<Signer> {
        let store = SecretStore::for_config_dir(dir)?;
        let mut made = false;
        let signer = parse(store.load_or_create(KEY_FILE, || {
            made = true;
            hex::encode(rand::random::<[u8; 32]>())
        })?)?;
        if made {
            tracing::info!(place = %store.describe(), "made a new audit signing key");
        }
        Ok(signer)
    }

    /// Where the key is kept.
    pub fn place(&self) -> Option<&Place> {
        self.place.as_ref()
    }

    pub fn public_hex(&self) -> String {
        hex::encode(self.key.verifying_key().to_bytes())
    }

    /// Signs `message` (the signature in hex); a site export is signed so.
    pub fn sign_message(&self, message: &[u8]) -> String {
        hex::encode(self.key.sign(message).to_bytes())
    }

    /// Signs the head `seq`/`hash` as of now.
    pub fn sign(&self, seq: i64, hash: &str) -> CheckpointRow {
        let ts = now_ms();
        let signature = self.key.sign(&message(seq, hash, ts));
        CheckpointRow {
            seq,
            hash: hash.to_string(),
            ts,
            public_key: self.public_hex(),
            signature: hex::encode(signature.to_bytes()),
        }
    }
}

fn message(seq: i64, hash: &str, ts: i64) -> Vec<u8> {
    format!("{FORMAT}\n{seq}\n{hash}\n{ts}").into_bytes()
}

/// Whether `row`'s signature is valid for its own public key.
pub fn signature_ok(row: &CheckpointRow) -> bool {
    signed_by(
        &row.public_key,
        &row.signature,
        &message(row.seq, &row.hash, row.ts),
    )
}

/// Whether `signature` (hex) is `public_key`'s (hex) over `message`.
pub fn signed_by(public_key: &str, signature: &str, message: &[u8]) -> bool {
    let Some(key) = hex::decode(public_key)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
    else {
        return false;
    };
    let Some(sig) = hex::decode(signature)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
    else {
        return false;
    };
    key.verify(message, &sig).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_covers_seq_hash_and_time() {
        let signer = Signer {
            key: SigningKey::from_bytes(&[7; 32]),
            place: None,
        };
        let row = signer.sign(5, "abc");
        assert!(signature_ok(&row));
        for tampered in [
            CheckpointRow {
                seq: 6,
                ..row.clone()
            },
            CheckpointRow {
                hash: "abd".into(),
                ..row.clone()
            },
            CheckpointRow {
                ts: row.ts + 1,
                ..row.clone()
            },
            CheckpointRow {
                public_key: Signer {
                    key: SigningKey::from_bytes(&[8; 32]),
                    place: None,
                }
                .public_hex(),
                ..row.clone()
            },
            CheckpointRow {
                signature: "00".into(),
                ..row.clone()
            },
        ] {
            assert!(!signature_ok(&tampered), "{tampered:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_key_is_made_once_with_mode_0600_and_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("conf");
        let a = Signer::load_or_create(&conf).unwrap();
        let b = Signer::load_or_create(&conf).unwrap();
        assert_eq!(a.public_hex(), b.public_hex());
        let mode = std::fs::metadata(conf.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(conf.join(KEY_FILE), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        assert_eq!(
            Signer::load(&conf).unwrap_err().code,
            codes::SECRET_STORE_INVALID
        );
    }
}
