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
//! Checkpoints are written at every clean shutdown ([`on_close`]) and by the
//! long-running server ([`maybe_checkpoint`]) every [`EVERY`] entries, but at
//! most once per [`SPACING`]: the tail a rewrite could go unnoticed in is at
//! most [`EVERY`] entries or [`SPACING`] of them, whichever is more.
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
//! - A key replaced or lost since it signed the anchor is named as that
//!   (`AUDIT_KEY_CHANGED`), not as an altered log; the anchor then vouches
//!   for nothing until the old key is back or the anchor is set aside.
//!
//! Map: [`signer`] is the key file and the signatures; [`anchor`] is the
//! copy beside the key and the process's memory of it; this file signs,
//! schedules, exports and verifies.

mod anchor;
pub mod signer;

use serde::{Deserialize, Serialize};

use self::anchor::{
    Running, anchor_path, cached_anchor_path, due, last_seq, note_due, read_anchor,
    read_anchor_checked, set_aside, set_tried, wait_for_spacing, write_anchor,
};
use self::signer::{Signer, signature_ok};

use crate::access::audit::{self, Report};
use crate::error::{Error, Result, codes};
use crate::host_env::config_dir;
use crate::site::Site;
use crate::store::audit::committed_head;
use crate::store::checkpoints::{self as sql, CheckpointRow};

/// What a signature covers and what an exported checkpoint says it is.
pub const FORMAT: &str = "gatehouse-audit-checkpoint/1";
/// The long-running server signs a checkpoint at least this often (entries)...
pub const EVERY: i64 = 100;
/// ...but no more often than this: a checkpoint (a signature, a row, a file
/// written and fsynced: about a millisecond of CPU) every 100 entries cost a
/// busy server a tenth of its CPU, and twice that when several servers share
/// one database, each signing the same chain.
pub const SPACING: std::time::Duration = std::time::Duration::from_millis(250);

/// A checkpoint as exported (`gatehouse audit checkpoint export`) to be kept elsewhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Exported {
    pub format: String,
    #[serde(flatten)]
    pub checkpoint: CheckpointRow,
}

fn export_json(row: &CheckpointRow) -> String {
    serde_json::to_string_pretty(&Exported {
        format: FORMAT.to_string(),
        checkpoint: row.clone(),
    })
    .expect("checkpoints serialise")
}

/// Signs and stores a checkpoint of the committed head, and moves this
/// machine's anchor to it. Refuses when the chain no longer holds the entry
/// the anchor signed (it was rewritten): signing then would bless the rewrite.
pub async fn checkpoint(site: &Site) -> Result<Option<CheckpointRow>> {
    let config = config_dir()?;
    let anchor = anchor_path(&config, site);
    // Read before the head, so every entry it counts is one the head read
    // sees: read after, it also counted this process's commits that landed
    // in between, and a busy server (several on one PostgreSQL) reported
    // its own log as cut.
    let written = site.store.highest_committed();
    let (seq, hash) = committed_head(&site.store).await?;
    if seq == 0 {
        return Ok(None);
    }
    // This process wrote entries past the head: they were cut from under it
    // (its shutdown had signed the shortened log).
    if seq < written {
        return Err(Error::new(
            codes::AUDIT_CHAIN_BROKEN,
            format!(
                "this process wrote audit entries up to {written}, but the log now ends at {seq}; not signing it"
            ),
        )
        .hint("run `gatehouse audit verify` and restore the database from a backup"));
    }
    // The key and the anchor are files (or the system's credential store, a
    // D-Bus round trip): read and signed on a blocking thread, never on the
    // runtime thread a server's calls are answered on.
    let (path, head) = (anchor.clone(), hash.clone());
    let (old, row) = blocking(move || {
        let old = read_anchor_checked(&path).map_err(|why| unreadable_anchor(&path, &why))?;
        let signer = Signer::load_or_create(&config)?;
        // Signed by another key (this one replaced, or lost and made anew):
        // replacing it would hide that from every later verify.
        if let Some(old) = &old
            && old.public_key != signer.public_hex()
        {
            return Err(key_changed(old, Some(&signer.public_hex()), &path));
        }
        let row = signer.sign(seq, &head);
        Ok((old, row))
    })
    .await?;
    if let Some(old) = old
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
    sql::insert(&site.store, &row).await?;
    // A blocking thread: the write ends in an fsync, which must not stall a
    // server's other calls; nor does it hold the write gate.
    let (path, copy) = (anchor.clone(), row.clone());
    blocking(move || {
        write_anchor(&path, &copy).map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot write the audit anchor {}: {e}", path.display()),
            )
        })
    })
    .await?;
    set_tried(&anchor, Some(seq));
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
/// task of its own, after the caller answered, once [`SPACING`] has passed
/// since this process last tried one; it then signs the head of that moment,
/// covering every entry committed while it waited. One task per anchor at a
/// time: calls that find a checkpoint due meanwhile note it, and the task
/// goes round again (after the spacing) while what they noted is `every`
/// entries past what it signed. A failed checkpoint waits for the next call
/// that finds one due, the spacing later.
pub fn maybe_checkpoint(site: &Site, seq: i64, every: i64) {
    let Some(anchor) = cached_anchor_path(site) else {
        return;
    };
    if !note_due(&anchor, seq, every) {
        return;
    }
    let Some(running) = Running::claim(&anchor) else {
        return;
    };
    let site = site.clone();
    tokio::spawn(async move {
        let signed = loop {
            let wait = wait_for_spacing(&anchor, SPACING);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let (wanted, signed) = {
                let _one = SIGNING.lock().await;
                // A clean shutdown may have signed the head meanwhile.
                let wanted = due(&anchor);
                if last_seq(&anchor) >= wanted {
                    break true;
                }
                (wanted, checkpoint(&site).await)
            };
            match signed {
                // Noted here too, not only by `checkpoint` under the path it
                // works out again (the folder may have moved since), and for an
                // empty log: else this loop would never see its work done.
                Ok(row) => set_tried(&anchor, Some(row.map_or(wanted, |r| r.seq))),
                Err(e) => {
                    set_tried(&anchor, None);
                    tracing::warn!(code = %e.code, message = %e.message, "could not write an audit checkpoint");
                    break false;
                }
            }
            if due(&anchor) - last_seq(&anchor) < every {
                break true;
            }
        };
        drop(running);
        // A call that found one due after the last look, before the claim went.
        let due = due(&anchor);
        if signed && due - last_seq(&anchor) >= every {
            maybe_checkpoint(&site, due, every);
        }
    });
}

/// Held while a server signs a checkpoint, so that one that came due never
/// runs beside a clean shutdown's, or after it on a store being closed: it
/// finds its entries covered and stops.
static SIGNING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The checkpoint of a clean shutdown: written when the head moved since this
/// machine's anchor. Failures are logged (the work itself is done).
pub async fn on_close(site: &Site) {
    let Ok(config) = config_dir() else {
        return;
    };
    let anchor = anchor_path(&config, site);
    let _one = SIGNING.lock().await;
    let head = match committed_head(&site.store).await {
        Ok((seq, _)) => seq,
        Err(_) => return,
    };
    if head == 0 {
        return;
    }
    if read_anchor(&anchor).is_some_and(|a| a.seq >= head) {
        // Another process signed it: nothing here is left to sign.
        set_tried(&anchor, Some(head));
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

/// Reads an exported checkpoint, checking its form and signature, and that
/// it was signed by this machine's key or one in `trusted` (hex): any key
/// signs a checkpoint of any chain, a rewritten one too, so one from a key
/// nobody named had vouched for a chain its rewriter signed.
pub fn parse_trusted(text: &str, trusted: &[String]) -> Result<CheckpointRow> {
    let row = parse_exported(text)?;
    let local = Signer::load(&config_dir()?)?.map(|s| s.public_hex());
    let key = row.public_key.to_ascii_lowercase();
    if local.as_deref() == Some(key.as_str())
        || trusted.iter().any(|k| k.trim().to_ascii_lowercase() == key)
    {
        return Ok(row);
    }
    Err(Error::new(
        codes::AUDIT_CHECKPOINT_INVALID,
        format!(
            "the checkpoint is signed by key {}, which this machine does not trust",
            row.public_key
        ),
    )
    .hint("compare it with `gatehouse audit key` on the machine that exported it; if they match, pass --trust-key KEY"))
}

/// Reads an exported checkpoint, checking its form and signature.
fn parse_exported(text: &str) -> Result<CheckpointRow> {
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
    report.imported = audit::imported(&site.store).await?;
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
    let anchor_file = anchor_path(&config, site);
    let anchor =
        read_anchor_checked(&anchor_file).map_err(|why| unreadable_anchor(&anchor_file, &why))?;
    if let Some(anchor) = anchor {
        if !signature_ok(&anchor) {
            return Err(unreadable_anchor(
                &anchor_file,
                "it does not match its signature (edited)",
            ));
        }
        if local.as_deref() != Some(anchor.public_key.as_str()) {
            return Err(key_changed(&anchor, local.as_deref(), &anchor_file));
        }
        trusted.push((anchor, "this machine's signed checkpoint"));
    }
    if let Some(extra) = extra {
        trusted.push((extra.clone(), "the given signed checkpoint"));
    }
    trusted.sort_by_key(|(row, _)| row.seq);
    let last = report.entries;
    for (row, what) in &trusted {
        let stored = sql::entry_hash(&site.store, row.seq).await?;
        if row.seq > last {
            // Signed after the chain was read (writers go on): it stands if
            // the log holds that entry now.
            if stored.as_deref() == Some(row.hash.as_str()) {
                continue;
            }
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
        if stored.as_deref() != Some(row.hash.as_str()) {
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

/// This machine's anchor file is damaged or edited: the file outside the
/// database is named, not an entry of the log.
fn unreadable_anchor(file: &std::path::Path, why: &str) -> Error {
    Error::new(
        codes::AUDIT_CHECKPOINT_INVALID,
        format!(
            "this machine's audit anchor {} cannot be trusted: {why}",
            file.display()
        ),
    )
    .hint("restore the file from a backup of your config folder; if none is left, move it aside: verify then checks the chain and this key's checkpoints, and the next checkpoint anchors the site anew")
}

/// Sets aside this machine's anchor of a site made anew in `site`'s folder
/// and database: the old site's anchor would fail every verify of the new
/// chain as a cut one. Returns where it went.
pub fn set_aside_anchor(site: &Site) -> Result<Option<std::path::PathBuf>> {
    let anchor = anchor_path(&config_dir()?, site);
    set_aside(&anchor).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!(
                "cannot move the old audit anchor {} aside: {e}",
                anchor.display()
            ),
        )
    })
}

/// This machine's anchor is validly signed, but not with the key this
/// machine signs with now: the key was replaced or lost, not the log
/// altered, so no entry is blamed. Whoever can replace the key can sign
/// anything with it, so setting the anchor aside costs no protection the key
/// gave; the hint says how, and how to keep it instead.
fn key_changed(anchor: &CheckpointRow, local: Option<&str>, file: &std::path::Path) -> Error {
    let short = |key: &str| key.chars().take(16).collect::<String>();
    let now = match local {
        Some(key) => format!("this machine now signs with key {}…", short(key)),
        None => "this machine holds no signing key now".to_string(),
    };
    Error::new(
        codes::AUDIT_KEY_CHANGED,
        format!(
            "this machine's audit anchor of the site (entry {}) was signed with key {}…, but {now}: the signing key was replaced or lost, so the anchor cannot vouch for the log",
            anchor.seq,
            short(&anchor.public_key)
        ),
    )
    .hint(format!(
        "put the old key back where `gatehouse audit key` says the key is kept; if it is lost for good, move the anchor {} aside: verify then checks the chain and this key's checkpoints, and the next checkpoint anchors the site with this key",
        file.display()
    ))
    .detail(serde_json::json!({
        "anchored_seq": anchor.seq,
        "anchor_key": anchor.public_key,
        "key": local,
    }))
}

/// Runs `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(Error::new(
            codes::IO_ERROR,
            format!("a checkpoint task failed: {e}"),
        ))
    })
}

fn broken(mut report: Report, seq: i64, problem: String) -> Report {
    report.ok = false;
    report.first_bad_seq = Some(seq);
    report.problem = Some(problem);
    report
}
