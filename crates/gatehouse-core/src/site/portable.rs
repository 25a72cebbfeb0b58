//! A portable, versioned JSON dump of a whole site, to move it between SQLite
//! and PostgreSQL (`gatehouse site export` / `site import`).
//!
//! The dump holds users (with their display names), API keys (their argon2
//! hashes only: a raw key is never stored anywhere, so it cannot be exported),
//! content with its redirects and the edits waiting to be published, media
//! (bytes as base64, checked against their SHA-256 on import), site config with
//! its secret marks (values in clear: the file is the admin's), MCP client
//! connection definitions (which hold no secret values) with their approved
//! tool lists, and the audit log with its head, exactly as stored: seq, ts and
//! hashes are kept, so the imported chain verifies and keys minted before the
//! move still work.
//!
//! Import goes into an *empty* site (a fresh `gatehouse site init` without
//! `--scratch`), in one transaction that holds the write lock: a dump that fails
//! any check leaves the target untouched. Nothing is appended to the audit log
//! by the import itself; what its history was taken on (the signer, or the
//! importer's word) is kept beside the log, `audit verify` reports it, and the
//! site's own exports carry it (`imports`) under their signature, so a history
//! taken unsigned does not come out of a re-export as this machine's.
//!
//! MCP client run and call records are operational history and are not carried.
//! OAuth clients, consents, codes, grants and tokens are not carried either:
//! they are bound to the issuer's public URL, and connected applications
//! connect again on the moved site (docs/decisions.md).
//!
//! The dump is signed with the exporting machine's audit signing key (the one
//! that signs audit checkpoints), over its canonical JSON. The audit chain has
//! no secret: whoever edits a key's roles can recompute the chain to match.
//! The signature cannot be recomputed without the key, so an import accepts a
//! dump signed by this machine's key or one the admin names (`--trust-key`),
//! and an unsigned one only when told to (`--unsigned`).
//!
//! # Caveats
//! The whole dump is held in memory (sites are small; media bytes are inline).
//! The file holds key hashes and drafts: it is written readable by its owner only.

use std::collections::HashSet;
use std::path::Path;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::access::audit::{GENESIS, ImportTrust, entry_hash};
use crate::access::permissions::parse_roles;
use crate::error::{Error, Result, codes};
use crate::host_env::config_dir;
use crate::site::{Site, checkpoint};
use crate::store::audit::AuditRow;
use crate::store::keys::KeyRow;
// The table records are the store's rows, serialised as they are.
use crate::store::Store;
pub use crate::store::connections::DefinitionRow as ConnectionRecord;
pub use crate::store::portable::ImportRow as ImportRecord;
use crate::store::portable::{self as sql, Tables};
pub use crate::store::portable::{
    ConfigRecord, ContentRecord, MediaRecord, PendingRecord, RedirectRecord, UserRecord,
};
pub use crate::store::tool_pins::PinRow as PinRecord;
use crate::time::now_ms;

/// The `format` field of every dump.
pub const FORMAT: &str = "gatehouse-site";
/// The dump version this Gatehouse writes and reads.
pub const VERSION: u32 = 1;

/// A whole site. Field order is the file's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dump {
    pub format: String,
    pub version: u32,
    pub gatehouse_version: String,
    /// When the dump was made (Unix milliseconds).
    pub exported_at: i64,
    /// The name of the site it came from (informational).
    pub site_name: String,
    pub users: Vec<UserRecord>,
    pub keys: Vec<KeyRecord>,
    pub content: Vec<ContentRecord>,
    pub redirects: Vec<RedirectRecord>,
    pub media: Vec<MediaRecord>,
    pub config: Vec<ConfigRecord>,
    pub connections: Vec<ConnectionRecord>,
    /// Edits of published entries waiting to be published (absent: none,
    /// or an older export).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingRecord>,
    /// The connections' approved tool lists (absent: none, or an older
    /// export, after which each server's first connect pins its list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<PinRecord>,
    pub audit: AuditRecord,
    /// What the imports the site came through took its history on, oldest
    /// first (absent for a site no import made): the dump's signer vouches
    /// for these entries only as they arrived.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportRecord>,
    /// Who vouches for the dump (absent in a dump that was never signed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<DumpSignature>,
}

/// The exporting machine's audit signing key (hex) and its signature over
/// the dump's canonical JSON without this field (see [`signed_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumpSignature {
    pub public_key: String,
    pub signature: String,
}

/// What an import accepts as the dump's signer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// Public keys (hex) of other machines' audit signing keys.
    pub keys: Vec<String>,
    /// Accept a dump that carries no signature at all.
    pub unsigned: bool,
}

/// What a dump's signature covers: its canonical JSON without the signature.
const SIGNED_AS: &str = "gatehouse-site-export/1";

fn signed_message(dump: &Dump) -> Vec<u8> {
    let mut value = serde_json::to_value(dump).expect("a dump serialises");
    if let Some(fields) = value.as_object_mut() {
        fields.remove("signature");
    }
    let digest = crate::json::canonical_sha256(&value);
    format!("{SIGNED_AS}\n{digest}").into_bytes()
}

fn tampered(message: impl Into<String>, hint: &str) -> Error {
    Error::invalid(codes::IMPORT_TAMPERED, message, hint)
}

/// What an import took a dump on: how its signer was trusted, and the key.
pub type Provenance = (ImportTrust, Option<String>);

/// Refuses a dump whose signature is missing (unless `trust.unsigned`),
/// does not match its content, or is not by this machine's key or one in
/// `trust.keys`; returns what it was taken on.
pub fn check_signature(dump: &Dump, trust: &Trust) -> Result<Provenance> {
    let Some(signed) = &dump.signature else {
        if trust.unsigned {
            return Ok((ImportTrust::Unsigned, None));
        }
        return Err(tampered(
            "the export is not signed, so nothing shows it is as it was exported",
            "export it again with this Gatehouse (exports are signed), or pass --unsigned if you made this file yourself and it never left your hands",
        ));
    };
    if !checkpoint::signer::signed_by(&signed.public_key, &signed.signature, &signed_message(dump))
    {
        return Err(tampered(
            "the export's signature does not match its content: it was changed after it was exported",
            "import the file exactly as `gatehouse site export` wrote it",
        ));
    }
    let own = checkpoint::signer::Signer::load(&config_dir()?)?.map(|s| s.public_hex());
    let key = signed.public_key.to_ascii_lowercase();
    if own.as_deref() == Some(key.as_str()) {
        return Ok((ImportTrust::ThisMachine, Some(key)));
    }
    if trust
        .keys
        .iter()
        .any(|k| k.trim().to_ascii_lowercase() == key)
    {
        return Ok((ImportTrust::TrustedKey, Some(key)));
    }
    Err(tampered(
        format!(
            "the export is signed by key {}, which this machine does not trust",
            signed.public_key
        ),
        "ask whoever exported it for their key (`gatehouse audit key` on their machine); if the two match, import with --trust-key KEY",
    ))
}

/// A key as stored: its public id and the argon2id PHC hash of its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRecord {
    pub id: String,
    pub label: String,
    pub roles: String,
    pub hash: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub replaced_by: Option<String>,
    /// The key's restrictions as stored (absent: none); checked against the
    /// audit log on import like its roles, so stripping them is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restrictions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub head_seq: i64,
    pub head_hash: String,
    pub entries: Vec<AuditEntryRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditEntryRecord {
    pub seq: i64,
    pub ts: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// How many rows an import wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub users: usize,
    pub keys: usize,
    pub content: usize,
    pub redirects: usize,
    pub media: usize,
    pub config: usize,
    pub connections: usize,
    pub audit_entries: usize,
}

impl Dump {
    pub fn summary(&self) -> Summary {
        Summary {
            users: self.users.len(),
            keys: self.keys.len(),
            content: self.content.len(),
            redirects: self.redirects.len(),
            media: self.media.len(),
            config: self.config.len(),
            connections: self.connections.len(),
            audit_entries: self.audit.entries.len(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a dump serialises")
    }
}

/// Reads the whole site in one consistent snapshot, signed with this
/// machine's audit signing key (made on first use).
pub async fn export(site: &Site) -> Result<Dump> {
    // Signed, the dump vouches for its log: one that does not verify here
    // (entries removed, the head moved back) would arrive clean elsewhere,
    // without the checkpoints that show the damage.
    crate::access::audit::require_ok(&checkpoint::verify(site, None).await?)?;
    let mut dump = export_unsigned(site).await?;
    let signer = checkpoint::signer::Signer::load_or_create(&config_dir()?)?;
    let signature = signer.sign_message(&signed_message(&dump));
    dump.signature = Some(DumpSignature {
        public_key: signer.public_hex(),
        signature,
    });
    Ok(dump)
}

async fn export_unsigned(site: &Site) -> Result<Dump> {
    let mut tx = sql::snapshot(&site.store).await?;
    let t = sql::read_all(&mut tx).await?;
    let _ = tx.rollback().await;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(Dump {
        format: FORMAT.to_string(),
        version: VERSION,
        gatehouse_version: crate::version().to_string(),
        exported_at: now_ms(),
        site_name: site.file.name.clone(),
        users: t.users,
        keys: t
            .keys
            .into_iter()
            .map(|k| KeyRecord {
                id: k.id,
                label: k.label,
                roles: k.roles,
                hash: k.hash,
                created_at: k.created_at,
                expires_at: k.expires_at,
                last_used_at: k.last_used_at,
                revoked_at: k.revoked_at,
                replaced_by: k.replaced_by,
                restrictions: k.restrictions,
            })
            .collect(),
        content: t.content,
        redirects: t.redirects,
        media: t
            .media
            .into_iter()
            .map(|(mut m, bytes)| {
                m.bytes_base64 = b64.encode(bytes);
                m
            })
            .collect(),
        config: t.config,
        connections: t.connections,
        pending: t.pending,
        pins: t.pins,
        imports: t.imports,
        signature: None,
        audit: AuditRecord {
            head_seq: t.head.0,
            head_hash: t.head.1,
            entries: t
                .audit
                .into_iter()
                .map(|a| AuditEntryRecord {
                    seq: a.seq,
                    ts: a.ts,
                    actor: a.actor,
                    action: a.action,
                    subject: a.subject,
                    detail: a.detail,
                    prev_hash: a.prev_hash,
                    hash: a.hash,
                })
                .collect(),
        },
    })
}

/// Writes a dump to `path` atomically, readable by its owner only.
pub fn write_file(dump: &Dump, path: &Path) -> Result<()> {
    let io = |e: std::io::Error| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot write the export to {}: {e}", path.display()),
        )
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{}.tmp", name.unwrap_or_default()));
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&tmp).map_err(io)?;
        f.write_all(dump.to_json().as_bytes()).map_err(io)?;
        f.write_all(b"\n").map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid(
        codes::IMPORT_INVALID,
        message,
        "import a file written by `gatehouse site export`, unchanged",
    )
}

/// Parses and checks a dump (format, version, shapes, uniqueness, media
/// checksums and the audit chain) before anything is written.
pub fn parse(text: &str) -> Result<Dump> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the export is not valid JSON: {e}")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(invalid(format!(
            "this is not a Gatehouse site export (its \"format\" is not {FORMAT:?})"
        )));
    }
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => {}
        other => {
            return Err(Error::invalid(
                codes::IMPORT_VERSION_UNSUPPORTED,
                format!(
                    "this export has version {}, this Gatehouse reads version {VERSION}",
                    other.map_or("none".to_string(), |v| v.to_string())
                ),
                "import it with the Gatehouse version that wrote it (or a newer one)",
            ));
        }
    }
    let dump: Dump = serde_json::from_value(value)
        .map_err(|e| invalid(format!("the export does not have the expected shape: {e}")))?;
    check(&dump)?;
    Ok(dump)
}

fn unique(what: &str, items: impl IntoIterator<Item = String>) -> Result<()> {
    let mut seen = HashSet::new();
    for item in items {
        if !seen.insert(item.clone()) {
            return Err(invalid(format!("the export lists {what} {item:?} twice")));
        }
    }
    Ok(())
}

fn check(d: &Dump) -> Result<()> {
    for u in &d.users {
        crate::access::users::check_email(&u.email)?;
        parse_roles(&u.roles)?;
    }
    unique("the user", d.users.iter().map(|u| u.email.to_lowercase()))?;
    for k in &d.keys {
        parse_roles(&k.roles)?;
        if !k.hash.starts_with("$argon2id$") {
            return Err(invalid(format!(
                "key {} has no argon2id hash (exports never hold raw keys)",
                k.id
            )));
        }
    }
    unique("the key", d.keys.iter().map(|k| k.id.clone()))?;
    // Slugs as a write would make them: a key's content scope matches
    // patterns against lowercase slugs, and an imported `BLOG-plan` was
    // listed to a `blog-*` key that could not read it.
    for slug in d
        .content
        .iter()
        .map(|c| &c.slug)
        .chain(d.redirects.iter().map(|r| &r.old_slug))
    {
        if crate::site::content::check_slug(slug).is_err() {
            return Err(invalid(format!(
                "{slug:?} is not a valid slug (lowercase letters, digits and single dashes); rename it on the site it came from (content_write_draft with new_slug), then export again"
            )));
        }
    }
    for c in &d.content {
        if c.status != "draft" && c.status != "published" {
            return Err(invalid(format!(
                "entry {:?} has status {:?} (draft or published)",
                c.slug, c.status
            )));
        }
    }
    unique(
        "the slug",
        d.content
            .iter()
            .map(|c| c.slug.clone())
            .chain(d.redirects.iter().map(|r| r.old_slug.clone())),
    )?;
    unique("the media item", d.media.iter().map(|m| m.filename.clone()))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    for m in &d.media {
        let bytes = b64
            .decode(&m.bytes_base64)
            .map_err(|e| invalid(format!("media {:?}: bad base64: {e}", m.filename)))?;
        if bytes.len() as i64 != m.size || hex::encode(Sha256::digest(&bytes)) != m.sha256 {
            return Err(invalid(format!(
                "media {:?}: its bytes do not match its size and SHA-256",
                m.filename
            )));
        }
    }
    unique("the config key", d.config.iter().map(|c| c.key.clone()))?;
    unique(
        "the MCP connection",
        d.connections.iter().map(|c| c.name.clone()),
    )?;
    let slugs: HashSet<&str> = d.content.iter().map(|c| c.slug.as_str()).collect();
    for p in &d.pending {
        if !slugs.contains(p.slug.as_str()) {
            return Err(invalid(format!(
                "a pending revision names entry {:?}, which the export does not hold",
                p.slug
            )));
        }
    }
    unique(
        "the pending revision of",
        d.pending.iter().map(|p| p.slug.clone()),
    )?;
    let connections: HashSet<&str> = d.connections.iter().map(|c| c.name.as_str()).collect();
    for p in &d.pins {
        if !connections.contains(p.name.as_str()) {
            return Err(invalid(format!(
                "a tool pin names connection {:?}, which the export does not hold",
                p.name
            )));
        }
    }
    unique("the tool pin of", d.pins.iter().map(|p| p.name.clone()))?;
    check_chain(&d.audit)?;
    check_imports(d)?;
    super::replay::check(d)
}

/// What a dump says its history was taken on must be readable, and within
/// its log: each import covers entries up to one of its own, in order.
fn check_imports(d: &Dump) -> Result<()> {
    let mut upto = 0;
    for i in &d.imports {
        if i.trust.parse::<ImportTrust>().is_err() {
            return Err(invalid(format!(
                "an import record names trust {:?} (this_machine, trusted_key or unsigned)",
                i.trust
            )));
        }
        if i.upto_seq < upto || i.upto_seq > d.audit.head_seq {
            return Err(invalid(format!(
                "an import record covers entries up to {}, outside the log's 0–{} or before the record ahead of it",
                i.upto_seq, d.audit.head_seq
            )));
        }
        upto = i.upto_seq;
    }
    Ok(())
}

/// The dump's audit chain must verify on its own, or the imported one would not.
fn check_chain(a: &AuditRecord) -> Result<()> {
    let broken = |seq: i64, why: &str| {
        Error::new(
            codes::AUDIT_CHAIN_BROKEN,
            format!("the export's audit log is broken at entry {seq}: {why}"),
        )
        .hint(
            "export again from the original site; `gatehouse audit verify` there names the damage",
        )
        .detail(serde_json::json!({"first_bad_seq": seq}))
    };
    let mut prev = GENESIS.to_string();
    for (i, e) in a.entries.iter().enumerate() {
        let expected = i as i64 + 1;
        if e.seq != expected {
            return Err(broken(expected, "entries are missing or out of order"));
        }
        if e.prev_hash != prev {
            return Err(broken(e.seq, "it does not follow the entry before it"));
        }
        let hash = entry_hash(
            e.seq,
            e.ts,
            &e.actor,
            &e.action,
            &e.subject,
            &e.detail,
            &e.prev_hash,
        );
        if hash != e.hash {
            return Err(broken(e.seq, "its hash does not match its contents"));
        }
        prev = e.hash.clone();
    }
    let last = a.entries.len() as i64;
    let head_hash_ok = if last == 0 {
        a.head_hash == GENESIS
    } else {
        a.head_hash == prev
    };
    if a.head_seq != last || !head_hash_ok {
        return Err(broken(
            last + 1,
            "its head does not point at its last entry",
        ));
    }
    Ok(())
}

fn tables(mut d: Dump) -> Result<Tables> {
    let b64 = base64::engine::general_purpose::STANDARD;
    // A mark the log says an admin set stays, whatever the file says (an
    // older export had none; an edited one could drop it).
    let marked = super::replay::secret_config(&d.audit.entries);
    for c in &mut d.config {
        c.secret |= marked.contains(&c.key);
    }
    Ok(Tables {
        users: d.users,
        keys: d
            .keys
            .into_iter()
            .map(|k| KeyRow {
                id: k.id,
                label: k.label,
                roles: k.roles,
                hash: k.hash,
                created_at: k.created_at,
                expires_at: k.expires_at,
                last_used_at: k.last_used_at,
                revoked_at: k.revoked_at,
                replaced_by: k.replaced_by,
                restrictions: k.restrictions,
            })
            .collect(),
        content: d.content,
        redirects: d.redirects,
        media: d
            .media
            .into_iter()
            .map(|m| {
                let bytes = b64
                    .decode(&m.bytes_base64)
                    .map_err(|e| invalid(format!("media {:?}: bad base64: {e}", m.filename)))?;
                Ok((m, bytes))
            })
            .collect::<Result<_>>()?,
        config: d.config,
        connections: d.connections,
        pending: d.pending,
        pins: d.pins,
        imports: d.imports,
        head: (d.audit.head_seq, d.audit.head_hash),
        audit: d
            .audit
            .entries
            .into_iter()
            .map(|e| AuditRow {
                seq: e.seq,
                ts: e.ts,
                actor: e.actor,
                action: e.action,
                subject: e.subject,
                detail: e.detail,
                prev_hash: e.prev_hash,
                hash: e.hash,
            })
            .collect(),
    })
}

/// Imports a checked dump into an empty site, in one transaction, with a
/// record of what its history was taken on (`provenance`, from
/// [`check_signature`]): `audit verify` reports it from then on, since the
/// import appends nothing to the log itself.
pub async fn import(store: &Store, dump: Dump, provenance: Provenance) -> Result<Summary> {
    let summary = dump.summary();
    let (trust, signed_by) = provenance;
    let record = sql::ImportRow {
        upto_seq: dump.audit.head_seq,
        imported_at: now_ms(),
        trust: <&str>::from(trust).to_string(),
        signed_by,
    };
    let t = tables(dump)?;
    let mut tx = store.begin_write().await?;
    if !sql::is_empty(&mut tx).await? {
        return Err(Error::new(
            codes::IMPORT_TARGET_NOT_EMPTY,
            format!("the site at {} is not empty", store.shown_url()),
        )
        .hint("import into a new site: `gatehouse site init DIR` (without --scratch), then `gatehouse --site DIR site import FILE`"));
    }
    sql::write_all(&mut tx, &t).await?;
    sql::record_import(&mut tx, &record).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing the import", e))?;
    Ok(summary)
}

/// Reads, checks (contents first, then the signature against `trust`) and
/// imports the dump in `path`.
pub async fn import_file(store: &Store, path: &Path, trust: &Trust) -> Result<Summary> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot read {}: {e}", path.display()),
        )
        .hint("give the path of a file written by `gatehouse site export --out FILE`")
    })?;
    let dump = parse(&text)?;
    let provenance = check_signature(&dump, trust)?;
    import(store, dump, provenance).await
}
