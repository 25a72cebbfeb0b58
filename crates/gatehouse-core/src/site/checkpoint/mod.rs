//! Signed checkpoints of the audit chain's head: what makes a rewritten chain
//! detectable.
//!
//! The chain alone has no secret, so someone who can write the database can cut
//! its tail and move the head back, or delete an entry and recompute every hash
//! after it, and [`audit::verify`] still passes. A checkpoint is the head
//! (`seq`, `hash`, `ts`) signed with an ed25519 key kept outside the database:
//! a file of mode 0600 in the user's config directory ([`config_dir`]). Each
//! checkpoint is stored in the database (so every admin sees it) and the newest
//! one this machine signed is also kept beside the key (the *anchor*), so
//! deleting the checkpoint rows does not help an attacker.
//!
//! Checkpoints are written at every clean shutdown ([`on_close`]) and at least
//! every [`EVERY`] entries by the long-running server ([`maybe_checkpoint`]).
//! [`verify`] checks the chain, then every checkpoint it can trust (this
//! machine's key, this machine's anchor, an exported file) against it.
//! PostgreSQL sites work the same way: each admin's machine has its own key and
//! anchor; checkpoints signed by keys not held here are counted, not trusted.
//!
//! # Caveats
//! - The anchor is found by the site folder and database URL: a moved site
//!   folder starts a new anchor (the signed rows in the database still count).
//! - A chain restored from an older backup fails verification against a newer
//!   anchor; that is the point, and the hint says so.

use std::collections::HashMap;
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::access::audit::{self, Report};
use crate::error::{Error, Result, codes};
use crate::host_env::config_dir;
use crate::site::Site;
use crate::store::audit::committed_head;
use crate::store::checkpoints::{self as sql, CheckpointRow};
use crate::time::now_ms;

pub const KEY_FILE: &str = "audit-signing-key";
const ANCHOR_DIR: &str = "audit-anchors";
/// What a signature covers and what an exported checkpoint says it is.
pub const FORMAT: &str = "gatehouse-audit-checkpoint/1";
/// The long-running server signs a checkpoint at least this often (entries).
pub const EVERY: i64 = 100;

/// A checkpoint as exported (`gatehouse audit checkpoint export`) to be kept elsewhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Exported {
    pub format: String,
    #[serde(flatten)]
    pub checkpoint: CheckpointRow,
}

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

/// Where this machine keeps its newest checkpoint of `site`.
fn anchor_path(config: &Path, site: &Site) -> PathBuf {
    let dir = std::fs::canonicalize(&site.dir).unwrap_or_else(|_| site.dir.clone());
    let id = Sha256::digest(format!("{}\n{}", dir.display(), site.store.shown_url()));
    config
        .join(ANCHOR_DIR)
        .join(format!("{}.json", &hex::encode(id)[..32]))
}

fn read_anchor(path: &Path) -> Option<CheckpointRow> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str::<Exported>(&text) {
        Ok(e) => Some(e.checkpoint),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable audit anchor");
            None
        }
    }
}

/// Makes `dir` enterable by its owner only (0700 on Unix; on Windows a
/// folder under the user's profile already has an owner-only ACL).
fn owner_only_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A new file readable by its owner only (0600 on Unix).
fn owner_only_file(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    options.mode(0o600);
    options
}

/// Replaces the anchor when `row` is newer (write to a temp file, then rename).
fn write_anchor(path: &Path, row: &CheckpointRow) -> std::io::Result<()> {
    if read_anchor(path).is_some_and(|old| old.seq >= row.seq) {
        return Ok(());
    }
    let dir = path.parent().expect("anchors live in a directory");
    std::fs::create_dir_all(dir)?;
    owner_only_dir(dir)?;
    // Unique per write: two checkpoints of one process must not share a file.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".anchor.{}.{n}.tmp", std::process::id()));
    let mut f = owner_only_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(&tmp)?;
    f.write_all(export_json(row).as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn export_json(row: &CheckpointRow) -> String {
    serde_json::to_string_pretty(&Exported {
        format: FORMAT.to_string(),
        checkpoint: row.clone(),
    })
    .expect("checkpoints serialise")
}

/// The last checkpoint seq this process wrote per anchor, so the server need
/// not read the database after every entry to know when the next is due.
static LAST: Mutex<Option<HashMap<PathBuf, i64>>> = Mutex::new(None);

fn last_seq(anchor: &Path) -> i64 {
    let mut guard = LAST.lock().expect("lock");
    let map = guard.get_or_insert_with(HashMap::new);
    *map.entry(anchor.to_path_buf())
        .or_insert_with(|| read_anchor(anchor).map_or(0, |a| a.seq))
}

fn set_last_seq(anchor: &Path, seq: i64) {
    let mut guard = LAST.lock().expect("lock");
    let slot = guard
        .get_or_insert_with(HashMap::new)
        .entry(anchor.to_path_buf())
        .or_insert(0);
    *slot = (*slot).max(seq);
}

/// Signs and stores a checkpoint of the committed head, and moves this
/// machine's anchor to it. Refuses when the chain no longer holds the entry
/// the anchor signed (it was rewritten): signing then would bless the rewrite.
pub async fn checkpoint(site: &Site) -> Result<Option<CheckpointRow>> {
    let config = config_dir()?;
    let anchor = anchor_path(&config, site);
    let (seq, hash) = committed_head(&site.store).await?;
    if seq == 0 {
        return Ok(None);
    }
    if let Some(old) = read_anchor(&anchor)
        && sql::entry_hash(&site.store, old.seq).await?.as_deref() != Some(old.hash.as_str())
    {
        return Err(Error::new(
            codes::AUDIT_CHAIN_BROKEN,
            format!(
                "entry {} no longer matches this machine's signed checkpoint of it; not signing the current head",
                old.seq
            ),
        )
        .hint("run `gatehouse audit verify` and restore the database from a backup"));
    }
    let signer = Signer::load_or_create(&config)?;
    let row = signer.sign(seq, &hash);
    sql::insert(&site.store, &row).await?;
    // A blocking thread: the write ends in an fsync, which must not stall a
    // single-threaded server's other calls.
    let (path, copy) = (anchor.clone(), row.clone());
    tokio::task::spawn_blocking(move || write_anchor(&path, &copy))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        .map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot write the audit anchor {}: {e}", anchor.display()),
            )
        })?;
    set_last_seq(&anchor, seq);
    tracing::debug!(seq, "signed an audit checkpoint");
    Ok(Some(row))
}

/// Writes a checkpoint when `seq` (an entry just committed) is at least
/// `every` entries past the last one; failures are logged, not fatal (the
/// entry itself is committed, and the next checkpoint covers it).
///
/// It runs after every tool call, so the common case (not due) costs a map
/// lookup, in place: the anchor's path is computed once per site (it
/// canonicalizes the folder and hashes it). A due checkpoint is written by a
/// task of its own, after the caller answered. One checkpoint per anchor at a
/// time: calls that find one due while it is being written skip it (it
/// covers them).
pub fn maybe_checkpoint(site: &Site, seq: i64, every: i64) {
    let Some(anchor) = cached_anchor_path(site) else {
        return;
    };
    if seq - last_seq(&anchor) < every {
        return;
    }
    let Some(running) = Running::claim(&anchor) else {
        return;
    };
    let site = site.clone();
    tokio::spawn(async move {
        if let Err(e) = checkpoint(&site).await {
            tracing::warn!(code = %e.code, message = %e.message, "could not write an audit checkpoint");
        }
        drop(running);
    });
}

/// [`anchor_path`] under [`config_dir`], remembered per site folder and URL.
fn cached_anchor_path(site: &Site) -> Option<PathBuf> {
    type Cache = Mutex<Option<HashMap<(PathBuf, String), PathBuf>>>;
    static ANCHORS: Cache = Mutex::new(None);
    let key = (site.dir.clone(), site.store.shown_url().to_string());
    if let Some(path) = ANCHORS
        .lock()
        .expect("lock")
        .as_ref()
        .and_then(|m| m.get(&key))
    {
        return Some(path.clone());
    }
    let path = anchor_path(&config_dir().ok()?, site);
    ANCHORS
        .lock()
        .expect("lock")
        .get_or_insert_with(HashMap::new)
        .insert(key, path.clone());
    Some(path)
}

/// The anchors whose checkpoint this process is writing now.
static RUNNING: Mutex<Option<std::collections::HashSet<PathBuf>>> = Mutex::new(None);

/// A claim on writing one anchor's checkpoint, released on drop.
struct Running(PathBuf);

impl Running {
    fn claim(anchor: &Path) -> Option<Running> {
        let mut guard = RUNNING.lock().expect("lock");
        let set = guard.get_or_insert_with(Default::default);
        set.insert(anchor.to_path_buf())
            .then(|| Running(anchor.to_path_buf()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(set) = RUNNING.lock().expect("lock").as_mut() {
            set.remove(&self.0);
        }
    }
}

/// The checkpoint of a clean shutdown: written when the head moved since this
/// machine's anchor. Failures are logged (the work itself is done).
pub async fn on_close(site: &Site) {
    let Ok(config) = config_dir() else {
        return;
    };
    let anchor = anchor_path(&config, site);
    let head = match committed_head(&site.store).await {
        Ok((seq, _)) => seq,
        Err(_) => return,
    };
    if head == 0 || read_anchor(&anchor).is_some_and(|a| a.seq >= head) {
        return;
    }
    if let Err(e) = checkpoint(site).await {
        tracing::warn!(code = %e.code, message = %e.message, "could not write an audit checkpoint at shutdown");
    }
}

/// Signs the current head and returns it in its exported form. Refuses when
/// the chain does not verify: an exported checkpoint must vouch for a good chain.
pub async fn export(site: &Site) -> Result<String> {
    let report = verify(site, None).await?;
    audit::require_ok(&report)?;
    let row = checkpoint(site).await?.ok_or_else(|| {
        Error::new(
            codes::AUDIT_CHAIN_BROKEN,
            "the audit log is empty; there is nothing to checkpoint",
        )
        .hint("checkpoints start with the first audited action")
    })?;
    Ok(export_json(&row))
}

/// Reads an exported checkpoint, checking its form and signature.
pub fn parse_exported(text: &str) -> Result<CheckpointRow> {
    let invalid = |why: String| {
        Error::new(codes::AUDIT_CHECKPOINT_INVALID, why)
            .hint("pass a file written by `gatehouse audit checkpoint export`, unedited")
    };
    let e: Exported = serde_json::from_str(text)
        .map_err(|e| invalid(format!("not an exported audit checkpoint: {e}")))?;
    if e.format != FORMAT {
        return Err(invalid(format!("unknown checkpoint format {:?}", e.format)));
    }
    if !signature_ok(&e.checkpoint) {
        return Err(invalid(format!(
            "the checkpoint of entry {} does not match its signature (edited or forged)",
            e.checkpoint.seq
        )));
    }
    Ok(e.checkpoint)
}

/// Checks the chain ([`audit::verify`]) and then every trusted checkpoint
/// against it: this machine's signed rows and anchor, and `extra` (an
/// exported checkpoint the caller kept). A row signed with this machine's key
/// whose signature fails is a forgery and breaks verification; a validly
/// signed row from another key is counted but not trusted (anyone can make a key).
pub async fn verify(site: &Site, extra: Option<&CheckpointRow>) -> Result<Report> {
    let mut report = audit::verify(&site.store).await?;
    if !report.ok {
        return Ok(report);
    }
    let config = config_dir()?;
    let local = Signer::load(&config)?.map(|s| s.public_hex());
    let mut trusted: Vec<(CheckpointRow, &'static str)> = Vec::new();
    let mut others = 0;
    for row in sql::all(&site.store).await? {
        if !signature_ok(&row) {
            return Ok(broken(
                report,
                row.seq,
                format!(
                    "the stored checkpoint of entry {} does not match its signature (forged or altered)",
                    row.seq
                ),
            ));
        }
        if local.as_deref() == Some(row.public_key.as_str()) {
            trusted.push((row, "a signed checkpoint"));
        } else {
            others += 1;
        }
    }
    if let Some(anchor) = read_anchor(&anchor_path(&config, site)) {
        if !signature_ok(&anchor) || local.as_deref() != Some(anchor.public_key.as_str()) {
            return Ok(broken(
                report,
                anchor.seq,
                "this machine's audit anchor does not match its signature or key".to_string(),
            ));
        }
        trusted.push((anchor, "this machine's signed checkpoint"));
    }
    if let Some(extra) = extra {
        trusted.push((extra.clone(), "the given signed checkpoint"));
    }
    trusted.sort_by_key(|(row, _)| row.seq);
    let last = report.entries;
    for (row, what) in &trusted {
        if row.seq > last {
            return Ok(broken(
                report,
                last + 1,
                format!(
                    "the chain ends at entry {last} but {what} records entry {}: entries from {} were removed and the head moved back",
                    row.seq,
                    last + 1
                ),
            ));
        }
        if sql::entry_hash(&site.store, row.seq).await?.as_deref() != Some(row.hash.as_str()) {
            return Ok(broken(
                report,
                row.seq,
                format!(
                    "entry {} differs from {what} of it: the chain was rewritten at or before entry {}",
                    row.seq, row.seq
                ),
            ));
        }
    }
    report.anchored_at = trusted.last().map(|(row, _)| row.seq);
    report.unverified_checkpoints = (others > 0).then_some(others);
    Ok(report)
}

fn broken(mut report: Report, seq: i64, problem: String) -> Report {
    report.ok = false;
    report.first_bad_seq = Some(seq);
    report.problem = Some(problem);
    report
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
