//! This machine's audit signing key (a 0600 file beside the anchors) and the
//! signatures a checkpoint or a site export carries.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier, VerifyingKey};

use super::FORMAT;
use crate::error::{Error, Result, codes};
use crate::store::checkpoints::CheckpointRow;
use crate::time::now_ms;

pub const KEY_FILE: &str = "audit-signing-key";

/// This machine's signing key.
pub struct Signer {
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer(public {})", self.public_hex())
    }
}

fn key_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        codes::AUDIT_KEY_INVALID,
        format!("the audit signing key {} {what}", path.display()),
    )
    .hint("the key signs audit checkpoints; keep it a 0600 file only you can read, or move it away to start a new one (old checkpoints then count as another machine's)")
}

impl Signer {
    /// The key in `dir`, if one was ever made.
    pub fn load(dir: &Path) -> Result<Option<Signer>> {
        let path = dir.join(KEY_FILE);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(key_error(&path, format_args!("cannot be read: {e}"))),
        };
        #[cfg(not(unix))]
        let _ = meta;
        #[cfg(unix)]
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(key_error(&path, "can be read by other users"));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| key_error(&path, format_args!("cannot be read: {e}")))?;
        let bytes: [u8; 32] = hex::decode(text.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| key_error(&path, "is not a key Gatehouse wrote"))?;
        Ok(Some(Signer {
            key: SigningKey::from_bytes(&bytes),
        }))
    }

    /// The key in `dir`, made on first use. Creation is atomic (a hard link of
    /// a complete file), so two processes starting at once agree on one key.
    pub fn load_or_create(dir: &Path) -> Result<Signer> {
        if let Some(s) = Self::load(dir)? {
            return Ok(s);
        }
        let path = dir.join(KEY_FILE);
        let io = |e: std::io::Error| key_error(&path, format_args!("cannot be created: {e}"));
        std::fs::create_dir_all(dir).map_err(io)?;
        owner_only_dir(dir).map_err(io)?;
        let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let tmp = dir.join(format!(".{KEY_FILE}.{}", std::process::id()));
        let mut f = owner_only_file(std::fs::OpenOptions::new().write(true).create_new(true))
            .open(&tmp)
            .map_err(io)?;
        f.write_all(hex::encode(key.to_bytes()).as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(io)?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                tracing::info!(path = %path.display(), "made a new audit signing key");
                Ok(Signer { key })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Self::load(dir)?.ok_or_else(|| key_error(&path, "vanished while being created"))
            }
            Err(e) => Err(io(e)),
        }
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

/// Makes `dir` enterable by its owner only (0700 on Unix; on Windows a
/// folder under the user's profile already has an owner-only ACL).
pub(super) fn owner_only_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A new file readable by its owner only (0600 on Unix).
pub(super) fn owner_only_file(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    options.mode(0o600);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_covers_seq_hash_and_time() {
        let signer = Signer {
            key: SigningKey::from_bytes(&[7; 32]),
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
            codes::AUDIT_KEY_INVALID
        );
    }
}
