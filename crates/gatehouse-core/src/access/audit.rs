//! The append-only, hash-chained audit log.
//!
//! Each entry's hash covers its own fields and the previous entry's hash, and the
//! `audit_head` row records an entry the chain must reach (moved by every
//! append but the server's on a SQLite file, and by every signed checkpoint),
//! so [`verify`] can tell an edited entry (its hash no longer matches), a
//! removed or reordered one (seq gap or a broken `prev_hash` link) and a
//! truncated tail (the recorded head points past the end).
//! Appends happen inside the caller's write transaction, so an action and its
//! audit entry commit together or not at all.

use serde::Serialize;

use crate::error::{Error, Result, codes};
use crate::store::audit::{self as sql, AuditRow};
use crate::store::{Store, Tx};
use crate::time::now_ms;

pub use crate::store::audit::{GENESIS, entry_hash};

/// Every action the audit log records, stored as its dotted name
/// (`key.mint`). The import tamper check ([`crate::site::replay`]) matches
/// this enum exhaustively, so a new action cannot be added without deciding
/// whether it changes a key or a user.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::EnumIter,
    strum::IntoStaticStr,
    ts_rs::TS,
)]
pub enum AuditAction {
    #[serde(rename = "key.mint")]
    #[strum(serialize = "key.mint")]
    KeyMint,
    #[serde(rename = "key.revoke")]
    #[strum(serialize = "key.revoke")]
    KeyRevoke,
    #[serde(rename = "key.roll")]
    #[strum(serialize = "key.roll")]
    KeyRoll,
    #[serde(rename = "key.restrict")]
    #[strum(serialize = "key.restrict")]
    KeyRestrict,
    /// A key used from an address outside its `from` networks (refused).
    #[serde(rename = "key.network_refused")]
    #[strum(serialize = "key.network_refused")]
    KeyNetworkRefused,
    #[serde(rename = "user.create")]
    #[strum(serialize = "user.create")]
    UserCreate,
    #[serde(rename = "user.set_roles")]
    #[strum(serialize = "user.set_roles")]
    UserSetRoles,
    #[serde(rename = "user.set_display_name")]
    #[strum(serialize = "user.set_display_name")]
    UserSetDisplayName,
    #[serde(rename = "user.disable")]
    #[strum(serialize = "user.disable")]
    UserDisable,
    #[serde(rename = "user.enable")]
    #[strum(serialize = "user.enable")]
    UserEnable,
    #[serde(rename = "user.delete")]
    #[strum(serialize = "user.delete")]
    UserDelete,
    #[serde(rename = "site.seed")]
    #[strum(serialize = "site.seed")]
    SiteSeed,
    #[serde(rename = "site_config.set")]
    #[strum(serialize = "site_config.set")]
    SiteConfigSet,
    #[serde(rename = "site_config.unset")]
    #[strum(serialize = "site_config.unset")]
    SiteConfigUnset,
    #[serde(rename = "content.create")]
    #[strum(serialize = "content.create")]
    ContentCreate,
    #[serde(rename = "content.revise")]
    #[strum(serialize = "content.revise")]
    ContentRevise,
    #[serde(rename = "content.update")]
    #[strum(serialize = "content.update")]
    ContentUpdate,
    #[serde(rename = "content.publish")]
    #[strum(serialize = "content.publish")]
    ContentPublish,
    #[serde(rename = "content.delete")]
    #[strum(serialize = "content.delete")]
    ContentDelete,
    #[serde(rename = "media.upload")]
    #[strum(serialize = "media.upload")]
    MediaUpload,
    /// A call to one of Gatehouse's own MCP tools.
    #[serde(rename = "mcp.tool_call")]
    #[strum(serialize = "mcp.tool_call")]
    McpToolCall,
    /// An outbound request `http_fetch` is about to send: written before it
    /// is sent, so none leaves unrecorded (its URL only as a digest, with
    /// its origin as the subject).
    #[serde(rename = "http.fetch")]
    #[strum(serialize = "http.fetch")]
    HttpFetch,
    /// A call Gatehouse made to a connected MCP server.
    #[serde(rename = "mcp.client_call")]
    #[strum(serialize = "mcp.client_call")]
    McpClientCall,
    #[serde(rename = "connection.add")]
    #[strum(serialize = "connection.add")]
    ConnectionAdd,
    #[serde(rename = "connection.edit")]
    #[strum(serialize = "connection.edit")]
    ConnectionEdit,
    #[serde(rename = "connection.remove")]
    #[strum(serialize = "connection.remove")]
    ConnectionRemove,
    #[serde(rename = "connection.consent")]
    #[strum(serialize = "connection.consent")]
    ConnectionConsent,
    #[serde(rename = "connection.tools_pinned")]
    #[strum(serialize = "connection.tools_pinned")]
    ConnectionToolsPinned,
    #[serde(rename = "connection.tools_changed")]
    #[strum(serialize = "connection.tools_changed")]
    ConnectionToolsChanged,
    #[serde(rename = "connection.tools_held")]
    #[strum(serialize = "connection.tools_held")]
    ConnectionToolsHeld,
    #[serde(rename = "connection.tools_approved")]
    #[strum(serialize = "connection.tools_approved")]
    ConnectionToolsApproved,
    /// An OAuth consent approved with a pasted key.
    #[serde(rename = "oauth.approve")]
    #[strum(serialize = "oauth.approve")]
    OauthApprove,
    #[serde(rename = "oauth.deny")]
    #[strum(serialize = "oauth.deny")]
    OauthDeny,
    /// An authorization code exchanged for a grant.
    #[serde(rename = "oauth.grant")]
    #[strum(serialize = "oauth.grant")]
    OauthGrant,
    #[serde(rename = "oauth.expire")]
    #[strum(serialize = "oauth.expire")]
    OauthExpire,
    /// A refresh token used twice: the grant is revoked.
    #[serde(rename = "oauth.reuse")]
    #[strum(serialize = "oauth.reuse")]
    OauthReuse,
    #[serde(rename = "oauth.revoke")]
    #[strum(serialize = "oauth.revoke")]
    OauthRevoke,
    /// A call held for a person to approve.
    #[serde(rename = "approval.asked")]
    #[strum(serialize = "approval.asked")]
    ApprovalAsked,
    #[serde(rename = "approval.approved")]
    #[strum(serialize = "approval.approved")]
    ApprovalApproved,
    #[serde(rename = "approval.denied")]
    #[strum(serialize = "approval.denied")]
    ApprovalDenied,
    #[serde(rename = "approval.declined")]
    #[strum(serialize = "approval.declined")]
    ApprovalDeclined,
    #[serde(rename = "approval.timeout")]
    #[strum(serialize = "approval.timeout")]
    ApprovalTimeout,
    #[serde(rename = "approval.abandoned")]
    #[strum(serialize = "approval.abandoned")]
    ApprovalAbandoned,
    /// An OAuth consent approved by its pairing code.
    #[serde(rename = "oauth.pair_approve")]
    #[strum(serialize = "oauth.pair_approve")]
    OauthPairApprove,
}

impl AuditAction {
    /// The stored name, e.g. `"key.mint"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every action, in declaration order.
    pub fn all() -> impl Iterator<Item = AuditAction> {
        <AuditAction as strum::IntoEnumIterator>::iter()
    }

    /// Reads a stored name back. A name this build does not know (written by
    /// a newer build, or edited in) is an error that names it, never a panic.
    pub fn parse_stored(name: &str, seq: i64) -> Result<AuditAction> {
        name.parse().map_err(|_| {
            Error::new(
                codes::STORED_VALUE_UNKNOWN,
                format!("audit entry {seq} records an action this build does not know: {name:?}"),
            )
            .hint("the log was written by a newer Gatehouse, or edited; use a build at least as new as the one that wrote it")
        })
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who an audit entry names, stored as its label: `cli`, `desktop`,
/// `local-admin` (outbound calls nobody else asked for), `public`,
/// `user:<email>`, `key:<id>` or `synthetic:<roles>`. Every label is written
/// by [`Display`](std::fmt::Display) and read back by [`FromStr`](std::str::FromStr), so the
/// prefixes live here only.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuditActor {
    /// The `gatehouse` CLI acting for the person at the terminal.
    Cli,
    /// The desktop app acting for the person at the window.
    Desktop,
    /// Outbound MCP calls that no actor asked for.
    LocalAdmin,
    /// The anonymous actor.
    Public,
    /// A user of the site, by email.
    User(String),
    /// An API key, by id (never the secret).
    Key(String),
    /// Roles asserted on a scratch site (`--role`), comma-separated.
    Synthetic(String),
}

impl AuditActor {
    const USER: &'static str = "user:";
    const KEY: &'static str = "key:";
    const SYNTHETIC: &'static str = "synthetic:";
    /// The label of [`AuditActor::Cli`], for call sites that take a label.
    pub const CLI: &'static str = "cli";
    /// The label of [`AuditActor::Desktop`].
    pub const DESKTOP: &'static str = "desktop";
    /// The label of [`AuditActor::LocalAdmin`].
    pub const LOCAL_ADMIN: &'static str = "local-admin";
    /// The label of [`AuditActor::Public`].
    pub const PUBLIC: &'static str = "public";

    /// The label's start that every key (`key:`) or user (`user:`) shares,
    /// for prefix queries.
    pub const KEY_PREFIX: &'static str = Self::KEY;
    pub const USER_PREFIX: &'static str = Self::USER;

    /// The key id, when the actor is a key.
    pub fn key_id(&self) -> Option<&str> {
        match self {
            AuditActor::Key(id) => Some(id),
            _ => None,
        }
    }

    /// The email, when the actor is a user.
    pub fn email(&self) -> Option<&str> {
        match self {
            AuditActor::User(email) => Some(email),
            _ => None,
        }
    }
}

impl std::fmt::Display for AuditActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditActor::Cli => f.write_str(Self::CLI),
            AuditActor::Desktop => f.write_str(Self::DESKTOP),
            AuditActor::LocalAdmin => f.write_str(Self::LOCAL_ADMIN),
            AuditActor::Public => f.write_str(Self::PUBLIC),
            AuditActor::User(email) => write!(f, "{}{email}", Self::USER),
            AuditActor::Key(id) => write!(f, "{}{id}", Self::KEY),
            AuditActor::Synthetic(roles) => write!(f, "{}{roles}", Self::SYNTHETIC),
        }
    }
}

impl std::str::FromStr for AuditActor {
    type Err = Error;

    fn from_str(label: &str) -> Result<Self> {
        Ok(match label {
            Self::CLI => AuditActor::Cli,
            Self::DESKTOP => AuditActor::Desktop,
            Self::LOCAL_ADMIN => AuditActor::LocalAdmin,
            Self::PUBLIC => AuditActor::Public,
            _ => {
                if let Some(email) = label.strip_prefix(Self::USER) {
                    AuditActor::User(email.to_string())
                } else if let Some(id) = label.strip_prefix(Self::KEY) {
                    AuditActor::Key(id.to_string())
                } else if let Some(roles) = label.strip_prefix(Self::SYNTHETIC) {
                    AuditActor::Synthetic(roles.to_string())
                } else {
                    return Err(Error::new(
                        codes::STORED_VALUE_UNKNOWN,
                        format!("{label:?} is not an actor label this build knows"),
                    )
                    .hint("labels are cli, desktop, local-admin, public, user:<email>, key:<id> or synthetic:<roles>"));
                }
            }
        })
    }
}

/// What is being recorded. `detail` is JSON and must never hold a secret.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    pub actor: &'a str,
    pub action: AuditAction,
    pub subject: &'a str,
    pub detail: serde_json::Value,
}

impl AuditEntry<'_> {
    fn to_new(&self) -> sql::NewAuditRow {
        new_row(self.actor, self.action, self.subject, &self.detail)
    }
}

/// The row of an entry whose detail is `detail`'s JSON text.
fn new_row(
    actor: &str,
    action: AuditAction,
    subject: &str,
    detail: &impl Serialize,
) -> sql::NewAuditRow {
    sql::NewAuditRow {
        actor: actor.to_string(),
        action: action.as_str().to_string(),
        subject: subject.to_string(),
        // Not `to_string`, which writes through `fmt` piece by piece.
        detail: serde_json::to_string(detail).expect("an audit detail serialises"),
    }
}

/// [`record`] for an entry whose detail is a typed struct, serialised
/// straight into its text: every tool call records one, and building a
/// `Value` map first cost its keys, its nodes and a second walk.
pub(crate) async fn record_typed(
    store: &Store,
    (actor, action, subject): (&str, AuditAction, &str),
    detail: &impl Serialize,
) -> Result<i64> {
    sql::record(store, new_row(actor, action, subject, detail)).await
}

/// Appends `entry` inside `tx` (which must come from `Store::begin_write`).
pub async fn append(tx: &mut Tx, entry: AuditEntry<'_>) -> Result<i64> {
    Ok(sql::append(tx, &[entry.to_new()], now_ms()).await?[0])
}

/// Appends one entry in a transaction of its own, shared with the entries
/// other tasks record at the same time (group commit, see `store::audit`).
/// Returns once the transaction holding it committed.
pub async fn record(store: &Store, entry: AuditEntry<'_>) -> Result<i64> {
    sql::record(store, entry.to_new()).await
}

/// The result of checking the whole chain.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "AuditReport")]
pub struct Report {
    pub entries: i64,
    pub ok: bool,
    /// The first entry found altered, removed or out of order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub first_bad_seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub problem: Option<String>,
    /// The newest entry a trusted signed checkpoint vouches for (see
    /// [`crate::site::checkpoint::verify`]); `None` from the bare chain check.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub anchored_at: Option<i64>,
    /// Validly signed checkpoints from keys this machine does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub unverified_checkpoints: Option<usize>,
    /// On a site made by `site import`: where its history came from, every
    /// import it came through, oldest first (empty for any other site).
    pub imported: Vec<Imported>,
}

/// What an import of a site took its history on: a signature by this
/// machine's key, by a key the admin named, or the admin's word alone.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS, strum::EnumString, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ImportTrust {
    ThisMachine,
    TrustedKey,
    Unsigned,
}

/// The entries up to `upto_seq` came in by an import at `imported_at`:
/// checkpoints signed here vouch for them only as they arrived.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "AuditImport")]
pub struct Imported {
    pub upto_seq: i64,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub imported_at: i64,
    pub trust: ImportTrust,
    /// The key that signed the dump (hex); absent when it was unsigned.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub signed_by: Option<String>,
}

/// Checks the whole chain, offline, in pages (the log can be long), as far
/// as the last entry stored when it starts: entries committed while it reads
/// come after it (a live site had been reported as cut). The chain must reach
/// the recorded head, with its hash; a row below seq 1 is outside it.
pub async fn verify(store: &Store) -> Result<Report> {
    let (head_seq, head_hash, lowest, highest) = sql::chain_bounds(store).await?;
    let upto = highest.unwrap_or(0);
    let mut expected_seq = 1;
    let mut prev = GENESIS.to_string();
    let mut entries = 0;
    let bad = |seq: i64, problem: String, entries: i64| Report {
        entries,
        ok: false,
        first_bad_seq: Some(seq),
        problem: Some(problem),
        anchored_at: None,
        unverified_checkpoints: None,
        imported: Vec::new(),
    };
    if let Some(low) = lowest.filter(|&l| l < 1) {
        return Ok(bad(
            low,
            format!("entry {low} is outside the chain, which starts at entry 1 (inserted)"),
            0,
        ));
    }
    // On PostgreSQL every append moves the recorded head: an entry past it
    // was added by something else (on SQLite the server's appends lead it).
    if store.backend() == crate::store::DatabaseKind::Postgres
        && let Some(high) = highest.filter(|&h| h > head_seq)
    {
        return Ok(bad(
            head_seq + 1,
            format!(
                "entries after the head's entry {head_seq} (up to {high}) are not part of the chain (inserted)"
            ),
            0,
        ));
    }
    let mut recorded = None;
    loop {
        let page = sql::page(store, expected_seq - 1, upto, 1000).await?;
        if page.is_empty() {
            break;
        }
        for row in page {
            entries += 1;
            if row.seq != expected_seq {
                return Ok(bad(
                    expected_seq,
                    format!(
                        "entry {expected_seq} is missing (next stored entry is {})",
                        row.seq
                    ),
                    entries,
                ));
            }
            if row.prev_hash != prev {
                return Ok(bad(
                    row.seq,
                    format!(
                        "entry {} does not follow entry {} (removed, inserted or reordered)",
                        row.seq,
                        row.seq - 1
                    ),
                    entries,
                ));
            }
            let hash = entry_hash(
                row.seq,
                row.ts,
                &row.actor,
                &row.action,
                &row.subject,
                &row.detail,
                &row.prev_hash,
            );
            if hash != row.hash {
                return Ok(bad(
                    row.seq,
                    format!(
                        "entry {} was altered (its hash does not match its contents)",
                        row.seq
                    ),
                    entries,
                ));
            }
            if row.seq == head_seq {
                recorded = Some(row.hash.clone());
            }
            prev = row.hash;
            expected_seq += 1;
        }
    }
    let last = expected_seq - 1;
    if head_seq > last {
        let first_missing = last + 1;
        return Ok(bad(
            first_missing,
            format!(
                "the chain ends at entry {last} but its head records entry {head_seq}: entries from {first_missing} were removed"
            ),
            entries,
        ));
    }
    if head_seq > 0 && recorded.as_deref() != Some(head_hash.as_str()) {
        return Ok(bad(
            head_seq,
            format!(
                "entry {head_seq} is not the one its head records (replaced, with every entry after it)"
            ),
            entries,
        ));
    }
    Ok(Report {
        entries,
        ok: true,
        first_bad_seq: None,
        problem: None,
        anchored_at: None,
        unverified_checkpoints: None,
        imported: Vec::new(),
    })
}

impl Imported {
    /// One line for people: which entries, when, and taken on what.
    pub fn describe(&self) -> String {
        let on = match (self.trust, &self.signed_by) {
            (ImportTrust::ThisMachine, _) => "signed by this machine's key".to_string(),
            (ImportTrust::TrustedKey, Some(key)) => format!(
                "signed by key {}…, trusted with --trust-key",
                key.chars().take(16).collect::<String>()
            ),
            (ImportTrust::TrustedKey, None) => {
                "signed by a key trusted with --trust-key".to_string()
            }
            (ImportTrust::Unsigned, _) => {
                "unsigned: taken on the importer's word (--unsigned)".to_string()
            }
        };
        let which = match self.upto_seq {
            0 => "no entries".to_string(),
            1 => "entry 1".to_string(),
            n => format!("entries 1–{n}"),
        };
        format!(
            "{which} came in by an import on {}, from an export {on}",
            crate::time::rfc3339(self.imported_at)
        )
    }
}

/// Where the site's history came from: every import it came through, oldest
/// first (the one that made the site last; empty when none did).
pub async fn imported(store: &Store) -> Result<Vec<Imported>> {
    crate::store::portable::imports(store)
        .await?
        .into_iter()
        .map(|row| {
            let trust = row.trust.parse().map_err(|_| {
                Error::new(
                    codes::STORED_VALUE_UNKNOWN,
                    format!(
                        "the site's import record stores trust {:?}, which this build does not know",
                        row.trust
                    ),
                )
                .hint("the record was written by a newer Gatehouse, or edited; open the site with a build at least as new")
            })?;
            Ok(Imported {
                upto_seq: row.upto_seq,
                imported_at: row.imported_at,
                trust,
                signed_by: row.signed_by,
            })
        })
        .collect()
}

/// [`verify`] as an error when the chain is broken.
pub fn require_ok(report: &Report) -> Result<()> {
    if report.ok {
        return Ok(());
    }
    Err(Error::new(
        codes::AUDIT_CHAIN_BROKEN,
        report.problem.clone().unwrap_or_default(),
    )
    .hint("restore the database from a backup; the entries before the reported one are intact")
    .detail(serde_json::json!({"first_bad_seq": report.first_bad_seq})))
}

/// The newest `limit` entries.
pub async fn list(store: &Store, limit: i64) -> Result<Vec<AuditRow>> {
    sql::latest(store, limit).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every action's stored name reads back as the same action, through
    /// serde and strum alike; an unknown name is an error with a code.
    #[test]
    fn every_audit_action_round_trips_its_stored_name() {
        let mut names = std::collections::HashSet::new();
        for action in AuditAction::all() {
            let name = action.as_str();
            assert!(names.insert(name), "duplicate {name}");
            assert_eq!(serde_json::to_value(action).unwrap(), name);
            assert_eq!(AuditAction::parse_stored(name, 1).unwrap(), action);
            let (area, verb) = name.split_once('.').expect("dotted");
            assert!(!area.is_empty() && !verb.is_empty(), "{name}");
        }
        let e = AuditAction::parse_stored("key.teleport", 7).unwrap_err();
        assert_eq!(e.code, codes::STORED_VALUE_UNKNOWN);
        assert!(e.message.contains("entry 7") && e.message.contains("key.teleport"));
    }

    #[test]
    fn every_actor_label_reads_back_as_the_same_actor() {
        for actor in [
            AuditActor::Cli,
            AuditActor::Desktop,
            AuditActor::LocalAdmin,
            AuditActor::Public,
            AuditActor::User("a@b.example".into()),
            AuditActor::Key("k_1".into()),
            AuditActor::Synthetic("editor,viewer".into()),
        ] {
            assert_eq!(actor.to_string().parse::<AuditActor>().unwrap(), actor);
        }
        assert_eq!(AuditActor::Key("x".into()).to_string(), "key:x");
        assert_eq!(AuditActor::Cli.to_string(), AuditActor::CLI);
        let e = "robot".parse::<AuditActor>().unwrap_err();
        assert_eq!(e.code, codes::STORED_VALUE_UNKNOWN);
    }
}
