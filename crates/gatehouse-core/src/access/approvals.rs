//! Calls that wait for a person's yes.
//!
//! Map: [`ApprovalPolicy`] is the `[approvals]` table of `gatehouse.toml`
//! (which tools or effect classes, for which roles, who decides, how long);
//! a key can add its own list ([`crate::access::restrictions::Restrictions::approve`]).
//! The server holds a matching call with [`hold`] (the row and its
//! `approval.asked` audit entry commit together), renews it with [`heartbeat`]
//! while it waits and ends it with [`conclude`]; a person decides it with
//! [`decide`] from another process (the CLI, the desktop app). Whichever ends
//! a hold first wins: every end is one conditional update `WHERE status =
//! 'waiting'` in the same transaction as its audit entry.
//!
//! A hold never outlives its server: a hold whose heartbeat stopped is
//! recorded as `abandoned` (not run) by [`sweep`] (every server start) or by
//! [`decide`] when it finds it, and nothing ever resumes a hold.

use rand::RngExt;
use rand::distr::Alphanumeric;
use rand::rand_core::UnwrapErr;
use rand::rngs::SysRng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::actor::Actor;
use super::audit::{self, AuditAction, AuditEntry};
use super::permissions::Role;
use crate::error::{Code, Error, Result};
use crate::store::Store;
use crate::store::held_calls::{self as sql, HeldRow};
use crate::time::now_ms;

/// How often a waiting server renews its hold.
pub const HEARTBEAT_MS: i64 = 1_000;
/// A hold not renewed for this long belongs to a server that is gone.
pub const STALE_AFTER_MS: i64 = 10_000;
/// The most calls of one caller that wait at once: each holds a request
/// slot for the policy's timeout, so one key from a few networks had filled
/// every slot of `gatehouse serve` with holds (and the owner's queue too).
pub const MAX_WAITING: i64 = 16;
/// Who ends a hold the server itself gave up on.
pub const SERVER_ACTOR: &str = "gatehouse";
/// The effect classes a policy may name (the manifest's `Effect`).
const EFFECTS: [&str; 4] = ["read", "write", "publish", "delete"];

/// `[approvals]` in `gatehouse.toml`. The default holds nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    /// Tools whose calls wait for a yes, by name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Effect classes whose calls wait for a yes: read, write, publish, delete.
    #[serde(default)]
    pub effects: Vec<String>,
    /// Only calls of actors with one of these roles wait (empty: everyone's).
    #[serde(default)]
    pub roles: Vec<Role>,
    /// Who says yes.
    #[serde(default)]
    pub decide: Decide,
    /// How long a call waits before it is refused.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
}

fn default_timeout() -> u64 {
    300
}

/// What no `[approvals]` table means, the same as an empty one: a key's own
/// `--approve` list holds calls under it, so its timeout is the table's
/// default, never zero (which had refused every such call at once).
impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy {
            tools: Vec::new(),
            effects: Vec::new(),
            roles: Vec::new(),
            decide: Decide::default(),
            timeout_seconds: default_timeout(),
        }
    }
}

/// Who says yes to a held call.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, strum::Display, ts_rs::TS,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Decide {
    /// The client's user, asked through MCP elicitation; the site owner's queue
    /// when the client cannot ask.
    #[default]
    Client,
    /// The site owner, from the approval queue (CLI or desktop app).
    Owner,
}

impl ApprovalPolicy {
    /// What is wrong with the table, for `gatehouse.toml`'s error.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if let Some(e) = self.effects.iter().find(|e| !EFFECTS.contains(&e.as_str())) {
            return Err(format!(
                "approvals.effects names {e:?}; effect classes are read, write, publish and delete"
            ));
        }
        if self.timeout_seconds == 0 || self.timeout_seconds > 86_400 {
            return Err("approvals.timeout_seconds must be between 1 and 86400".into());
        }
        Ok(())
    }

    /// Whether a call of `tool` (effect class `effect`) by `actor` waits:
    /// the site's rule, or the key's own list (tool names or effect classes).
    pub fn holds(&self, actor: &Actor, tool: &str, effect: &str) -> bool {
        let by_key = actor
            .restrictions()
            .and_then(|r| r.approve.as_ref())
            .is_some_and(|list| list.iter().any(|x| x == tool || x == effect));
        self.holds_by_site(actor, tool, effect) || by_key
    }

    /// Whether the site's own rule (not a key's list) holds the call.
    pub fn holds_by_site(&self, actor: &Actor, tool: &str, effect: &str) -> bool {
        (self.tools.iter().any(|t| t == tool) || self.effects.iter().any(|e| e == effect))
            && (self.roles.is_empty() || actor.roles().iter().any(|r| self.roles.contains(r)))
    }

    /// Who decides a call [`ApprovalPolicy::holds`]: the table's `decide`
    /// when the site's rule holds it; the owner when only the key's own
    /// `--approve` list does. That list is an admin's restriction on the
    /// key: its holder's client had said yes to it under `decide = "client"`.
    pub fn decider(&self, actor: &Actor, tool: &str, effect: &str) -> Decide {
        if self.holds_by_site(actor, tool, effect) {
            self.decide
        } else {
            Decide::Owner
        }
    }
}

/// Where a held call stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[ts(rename = "HeldStatus")]
pub enum Status {
    Waiting,
    Approved,
    Denied,
    /// The client's user said no.
    Declined,
    TimedOut,
    /// Its server stopped while it waited: not run, and never run later.
    Abandoned,
}

impl Status {
    /// The audit action that records a hold ending in this status.
    fn action(self) -> AuditAction {
        match self {
            Status::Waiting => AuditAction::ApprovalAsked,
            Status::Approved => AuditAction::ApprovalApproved,
            Status::Denied => AuditAction::ApprovalDenied,
            Status::Declined => AuditAction::ApprovalDeclined,
            Status::TimedOut => AuditAction::ApprovalTimeout,
            Status::Abandoned => AuditAction::ApprovalAbandoned,
        }
    }
}

/// A held call as the CLI and the desktop app show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct HeldCall {
    pub id: String,
    /// Whose call it is (`key:<id>`, `user:<email>`).
    pub actor: String,
    pub tool: String,
    /// One line a person can say yes or no to.
    pub summary: String,
    /// The arguments, secrets and large payloads replaced by what they are.
    #[ts(type = "unknown")]
    pub arguments: Value,
    /// SHA-256 of the exact arguments the call will run with.
    pub args_sha256: String,
    /// For content: the change against the entry as it was when held.
    #[ts(optional)]
    pub diff: Option<String>,
    pub decider: Decide,
    pub status: Status,
    /// The waiting server (`pid@host`), or `client` when no server waits
    /// (the client brings its user's answer in a later request).
    pub holder: String,
    pub created_at: i64,
    pub expires_at: i64,
    #[ts(optional)]
    pub decided_at: Option<i64>,
    #[ts(optional)]
    pub decided_by: Option<String>,
    /// SHA-256 of the entry the diff was made against (the call runs only
    /// against that entry).
    #[serde(skip)]
    pub base_sha256: Option<String>,
    #[serde(skip)]
    pub heartbeat_at: i64,
}

impl HeldCall {
    fn from_row(r: HeldRow) -> Result<HeldCall> {
        let bad = |what: &str| {
            Error::new(
                Code::STORAGE_ERROR,
                format!("held call {} has an unreadable {what}", r.id),
            )
        };
        Ok(HeldCall {
            arguments: serde_json::from_str(&r.arguments).map_err(|_| bad("arguments"))?,
            decider: match r.decider.as_str() {
                "client" => Decide::Client,
                "owner" => Decide::Owner,
                _ => return Err(bad("decider")),
            },
            status: r.status.parse().map_err(|_| bad("status"))?,
            id: r.id,
            actor: r.actor,
            tool: r.tool,
            summary: r.summary,
            args_sha256: r.args_sha256,
            diff: r.diff,
            holder: r.holder,
            created_at: r.created_at,
            expires_at: r.expires_at,
            decided_at: r.decided_at,
            decided_by: r.decided_by,
            base_sha256: r.base_sha256,
            heartbeat_at: r.heartbeat_at,
        })
    }

    /// Whether the server holding it stopped renewing it.
    pub fn holder_gone(&self, now: i64) -> bool {
        self.status == Status::Waiting && self.heartbeat_at < now - STALE_AFTER_MS
    }
}

/// What the server records when it holds a call.
pub struct NewHold<'a> {
    pub actor: &'a str,
    pub tool: &'a str,
    pub summary: String,
    pub arguments: Value,
    pub args_sha256: String,
    pub diff: Option<String>,
    pub base_sha256: Option<String>,
    pub decider: Decide,
    pub timeout_ms: i64,
    /// What the audit entry adds (e.g. the client's name).
    pub via: Value,
    /// No server waits on it: the client answers in a later request (the
    /// 2026-07-28 `input_required` round trip), so nothing renews it and it
    /// is not taken for abandoned before its timeout.
    pub detached: bool,
}

/// The holder of a hold no server waits on (see [`NewHold::detached`]).
pub const DETACHED_HOLDER: &str = "client";

/// This process as a hold's holder.
pub fn this_holder() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{}@{host}", std::process::id())
}

fn new_id() -> String {
    let tail: String = UnwrapErr(SysRng)
        .sample_iter(Alphanumeric)
        .take(16)
        .map(char::from)
        .collect();
    format!("hold_{tail}")
}

/// Records a held call and its `approval.asked` entry together.
pub async fn hold(store: &Store, new: NewHold<'_>) -> Result<HeldCall> {
    let now = now_ms();
    let row = HeldRow {
        id: new_id(),
        actor: new.actor.to_string(),
        tool: new.tool.to_string(),
        summary: new.summary,
        arguments: new.arguments.to_string(),
        args_sha256: new.args_sha256,
        diff: new.diff,
        base_sha256: new.base_sha256,
        decider: new.decider.to_string(),
        status: Status::Waiting.to_string(),
        holder: if new.detached {
            DETACHED_HOLDER.to_string()
        } else {
            this_holder()
        },
        created_at: now,
        expires_at: now + new.timeout_ms,
        // A detached hold counts as renewed until its timeout.
        heartbeat_at: if new.detached {
            now + new.timeout_ms
        } else {
            now
        },
        decided_at: None,
        decided_by: None,
    };
    let mut tx = store.begin_write().await?;
    // Counted in the write transaction, so instances racing agree.
    if sql::waiting_of_in(&mut tx, new.actor).await? >= MAX_WAITING {
        return Err(Error::new(
            Code::APPROVAL_QUEUE_FULL,
            format!(
                "{MAX_WAITING} calls of {} already wait for a decision",
                new.actor
            ),
        )
        .hint("nothing was run or held; call again once some of them are decided or timed out"));
    }
    sql::insert_in(&mut tx, &row).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor: new.actor,
            action: Status::Waiting.action(),
            subject: new.tool,
            detail: json!({
                "hold": row.id,
                "args_sha256": row.args_sha256,
                "decider": row.decider,
                "expires_at": row.expires_at,
                "via": new.via,
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a held call", e))?;
    HeldCall::from_row(row)
}

/// The hold as stored now.
pub async fn get(store: &Store, id: &str) -> Result<HeldCall> {
    match sql::get(store, id).await? {
        Some(row) => HeldCall::from_row(row),
        None => Err(not_found(id)),
    }
}

fn not_found(id: &str) -> Error {
    Error::new(
        Code::APPROVAL_NOT_FOUND,
        format!(
            "no held call {} on this site",
            crate::text::escape_controls(&id.chars().take(64).collect::<String>())
        ),
    )
    .hint("`gatehouse approvals list` shows the calls waiting on this site (check --site)")
}

/// Held calls, newest first; only waiting ones unless `all`.
pub async fn list(store: &Store, all: bool) -> Result<Vec<HeldCall>> {
    let status = (!all).then(|| Status::Waiting.to_string());
    sql::list(store, status.as_deref(), 500)
        .await?
        .into_iter()
        .map(HeldCall::from_row)
        .collect()
}

/// The waiting server renews its hold.
pub async fn heartbeat(store: &Store, id: &str) -> Result<()> {
    let mut tx = store.begin_write().await?;
    sql::heartbeat_in(&mut tx, id, now_ms()).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("renewing a held call", e))
}

/// The waiting server takes its approved hold to run it; false when a
/// sweep ([`sweep`]) recorded it as not run first (this server had gone
/// quiet for [`STALE_AFTER_MS`]), so it must not run.
pub async fn take(store: &Store, id: &str) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let taken = sql::take_in(&mut tx, id, now_ms()).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("taking an approved held call", e))?;
    Ok(taken)
}

/// Ends a waiting hold as `status`, decided by `by`, with its audit entry;
/// false when it had ended already (someone else decided first).
pub async fn conclude(
    store: &Store,
    held: &HeldCall,
    status: Status,
    by: &str,
    detail: Value,
) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let won = conclude_in(&mut tx, held, status, by, detail).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("deciding a held call", e))?;
    Ok(won)
}

async fn conclude_in(
    tx: &mut crate::store::Tx,
    held: &HeldCall,
    status: Status,
    by: &str,
    detail: Value,
) -> Result<bool> {
    if !sql::conclude_in(tx, &held.id, &status.to_string(), by, now_ms()).await? {
        return Ok(false);
    }
    append_end(tx, held, status, by, detail).await?;
    Ok(true)
}

/// The audit entry of a hold's end as `status`, by `by`: `detail` with the
/// hold, its caller and the arguments' digest.
async fn append_end(
    tx: &mut crate::store::Tx,
    held: &HeldCall,
    status: Status,
    by: &str,
    mut detail: Value,
) -> Result<()> {
    detail["hold"] = json!(held.id);
    detail["caller"] = json!(held.actor);
    detail["args_sha256"] = json!(held.args_sha256);
    audit::append(
        tx,
        AuditEntry {
            actor: by,
            action: status.action(),
            subject: &held.tool,
            detail,
        },
    )
    .await?;
    Ok(())
}

/// A person's answer to a held call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

/// The audit label of whoever decides from a terminal or the desktop app:
/// the local owner (`owner`, e.g. `cli`), or an admin user. A key, a
/// synthetic role or the public never decide: the person who owns the site
/// does.
pub fn decider_label(owner: &str, actor: Option<&Actor>) -> Result<String> {
    match actor {
        None => Ok(owner.to_string()),
        // An application acting as a user through OAuth is not the person.
        Some(a) if a.grant().is_some() => Err(Error::new(
            Code::APPROVAL_DECIDER_INVALID,
            "an OAuth grant cannot decide a held call",
        )
        .hint("decide as the site owner (no actor flags) or as a user with the admin role")),
        Some(a @ Actor::User { roles, .. }) if roles.contains(&Role::Admin) => Ok(a.label()),
        Some(Actor::User { .. }) => Err(Error::new(
            Code::APPROVAL_DECIDER_INVALID,
            "only an admin user decides held calls",
        )
        .hint("decide as the site owner (no actor flags) or as a user with the admin role")),
        Some(_) => Err(Error::new(
            Code::APPROVAL_DECIDER_INVALID,
            "a key or a synthetic role cannot decide a held call",
        )
        .hint("held calls are decided by a person: run the command without --api-key, --key-id or --role (and without GATEHOUSE_API_KEY)")),
    }
}

/// A person approves or denies a held call (see [`decider_label`] for who may).
/// Refused: an unknown id, a call decided or ended already, one past its
/// timeout, one whose server is gone (then recorded as not run), one asked of
/// the client's user, and the caller deciding its own call.
pub async fn decide(store: &Store, id: &str, decision: Decision, by: &str) -> Result<HeldCall> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let held = match sql::get_in(&mut tx, id).await? {
        Some(row) => HeldCall::from_row(row)?,
        None => return Err(not_found(id)),
    };
    let refusal = if held.status != Status::Waiting {
        Some(
            Error::new(
                Code::APPROVAL_ALREADY_DECIDED,
                format!("held call {id} is {} already", held.status),
            )
            .hint(match held.decided_by.as_deref() {
                Some(who) => format!("{who} ended it; a held call is decided once"),
                None => "a held call is decided once".into(),
            }),
        )
    } else if held.actor == by {
        Some(
            Error::new(
                Code::APPROVAL_SELF_DECISION,
                format!("{by} cannot decide its own held call"),
            )
            .hint("another person (the site owner or another admin) decides it"),
        )
    } else if held.decider == Decide::Client {
        Some(
            Error::new(
                Code::APPROVAL_NOT_QUEUED,
                format!("held call {id} is being asked of the client's user"),
            )
            .hint("it waits for the client's answer; policy decide = \"owner\" queues calls for the site owner"),
        )
    } else {
        None
    };
    if let Some(e) = refusal {
        return Err(e);
    }
    let ended = if held.expires_at <= now {
        Some((
            Status::TimedOut,
            Error::new(
                Code::APPROVAL_EXPIRED,
                format!("held call {id} timed out before this decision"),
            )
            .hint("the call was refused; the client may call again"),
        ))
    } else if held.holder_gone(now) {
        Some((
            Status::Abandoned,
            Error::new(
                Code::APPROVAL_HOLDER_GONE,
                format!(
                    "the server holding call {id} ({}) is gone; the call was recorded as not run",
                    held.holder
                ),
            )
            .hint("nothing will run it later; the client may call again"),
        ))
    } else {
        None
    };
    if let Some((status, e)) = ended {
        conclude_in(
            &mut tx,
            &held,
            status,
            SERVER_ACTOR,
            json!({"found_by": by}),
        )
        .await?;
        tx.commit()
            .await
            .map_err(|e| Error::storage("deciding a held call", e))?;
        return Err(e);
    }
    let status = match decision {
        Decision::Approve => Status::Approved,
        Decision::Deny => Status::Denied,
    };
    conclude_in(&mut tx, &held, status, by, json!({"via": "queue"})).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("deciding a held call", e))?;
    get(store, id).await
}

/// Records every hold whose server is gone as not run (timed out when its
/// timeout passed first); returns how many. Every server start runs it, so a
/// crash leaves nothing waiting.
pub async fn sweep(store: &Store) -> Result<usize> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    let stale = sql::stale_in(&mut tx, now - STALE_AFTER_MS).await?;
    let mut n = 0;
    for row in stale {
        let held = HeldCall::from_row(row)?;
        let status = if held.expires_at <= now {
            Status::TimedOut
        } else {
            Status::Abandoned
        };
        if conclude_in(
            &mut tx,
            &held,
            status,
            SERVER_ACTOR,
            json!({"found_by": "server start"}),
        )
        .await?
        {
            n += 1;
        }
    }
    // Approved, but its server died before it took the hold (in the seconds
    // before the yes, too soon for the decision to find it gone): no server
    // will run it, and its record said approved for good.
    for row in sql::untaken_in(&mut tx, now - STALE_AFTER_MS).await? {
        let held = HeldCall::from_row(row)?;
        if sql::abandon_untaken_in(&mut tx, &held.id).await? {
            let detail = json!({"found_by": "sweep", "approved_by": held.decided_by});
            append_end(&mut tx, &held, Status::Abandoned, SERVER_ACTOR, detail).await?;
            n += 1;
        }
    }
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording abandoned held calls", e))?;
    Ok(n)
}

/// What a desktop notification says about calls that wait for the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct HeldNotice {
    pub title: String,
    pub body: String,
    /// The holds it names, oldest first.
    pub ids: Vec<String>,
}

/// How many summaries a notice lists before "and N more".
const NOTICE_LINES: usize = 3;

/// The notice for those of `calls` that wait for the owner's decision
/// (calls asked of the client's user are not the owner's, decided ones are
/// over); `None` when none does.
pub fn notice(calls: &[HeldCall]) -> Option<HeldNotice> {
    let mut waiting: Vec<&HeldCall> = calls
        .iter()
        .filter(|c| c.status == Status::Waiting && c.decider == Decide::Owner)
        .collect();
    waiting.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    let first = waiting.first()?;
    let title = match waiting.len() {
        1 => "A call waits for your yes".to_string(),
        n => format!("{n} calls wait for your yes"),
    };
    let mut lines: Vec<String> = waiting
        .iter()
        .take(NOTICE_LINES)
        .map(|c| c.summary.clone())
        .collect();
    if waiting.len() > NOTICE_LINES {
        lines.push(format!("and {} more", waiting.len() - NOTICE_LINES));
    }
    if waiting.len() == 1 {
        lines.push(format!("Asked by {}", first.actor));
    }
    Some(HeldNotice {
        title,
        body: lines.join("\n"),
        ids: waiting.iter().map(|c| c.id.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::restrictions::Restrictions;

    #[test]
    fn no_approvals_table_means_what_an_empty_one_does_never_a_zero_timeout() {
        let empty: ApprovalPolicy = toml::from_str("").unwrap();
        assert_eq!(ApprovalPolicy::default(), empty);
        assert_eq!(ApprovalPolicy::default().timeout_seconds, 300);
    }

    fn held(id: &str, at: i64, decider: Decide, status: Status) -> HeldCall {
        HeldCall {
            id: id.into(),
            actor: "key:k1".into(),
            tool: "content_publish".into(),
            summary: format!("Publish '{id}' to the live site?"),
            arguments: json!({}),
            args_sha256: String::new(),
            diff: None,
            decider,
            status,
            holder: String::new(),
            created_at: at,
            expires_at: at + 1,
            decided_at: None,
            decided_by: None,
            base_sha256: None,
            heartbeat_at: at,
        }
    }

    #[test]
    fn notice_names_only_calls_the_owner_still_decides() {
        use Decide::{Client, Owner};
        assert_eq!(notice(&[]), None);
        let done = held("done", 1, Owner, Status::Approved);
        let asked = held("asked", 2, Client, Status::Waiting);
        assert_eq!(notice(&[done.clone(), asked.clone()]), None);
        let one = notice(&[done, asked, held("a", 3, Owner, Status::Waiting)]).unwrap();
        assert_eq!(one.title, "A call waits for your yes");
        assert_eq!(one.body, "Publish 'a' to the live site?\nAsked by key:k1");
        assert_eq!(one.ids, ["a"]);
        // Oldest first; past three, the rest are counted.
        let many: Vec<HeldCall> = (0..5)
            .rev()
            .map(|i| held(&format!("h{i}"), i, Owner, Status::Waiting))
            .collect();
        let n = notice(&many).unwrap();
        assert_eq!(n.title, "5 calls wait for your yes");
        assert_eq!(
            n.body,
            "Publish 'h0' to the live site?\nPublish 'h1' to the live site?\nPublish 'h2' to the live site?\nand 2 more"
        );
        assert_eq!(n.ids, ["h0", "h1", "h2", "h3", "h4"]);
    }

    fn key(roles: Vec<Role>, approve: Option<Vec<&str>>) -> Actor {
        Actor::ApiKey {
            key_id: "k".into(),
            roles,
            restrictions: Restrictions {
                approve: approve.map(|v| v.into_iter().map(String::from).collect()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn policy_holds_by_tool_effect_role_or_the_keys_own_list() {
        let none = ApprovalPolicy::default();
        assert!(!none.holds(&key(vec![Role::Editor], None), "content_publish", "publish"));
        let p: ApprovalPolicy = toml::from_str(
            "effects = [\"publish\"]\ntools = [\"media_write\"]\nroles = [\"author\"]\n",
        )
        .unwrap();
        assert!(p.validate().is_ok());
        assert!(p.holds(&key(vec![Role::Author], None), "content_publish", "publish"));
        assert!(p.holds(&key(vec![Role::Author], None), "media_write", "write"));
        assert!(!p.holds(
            &key(vec![Role::Author], None),
            "content_write_draft",
            "write"
        ));
        // Roles narrow the site rule to those roles.
        assert!(!p.holds(&key(vec![Role::Editor], None), "content_publish", "publish"));
        // A key's own list holds by tool name or effect class.
        let k = key(
            vec![Role::Editor],
            Some(vec!["delete", "content_write_draft"]),
        );
        assert!(none.holds(&k, "content_delete", "delete"));
        assert!(none.holds(&k, "content_write_draft", "write"));
        assert!(!none.holds(&k, "content_read", "read"));
    }

    #[test]
    fn policy_refuses_unknown_effects_and_silly_timeouts() {
        let p: ApprovalPolicy = toml::from_str("effects = [\"publsh\"]\n").unwrap();
        assert!(p.validate().unwrap_err().contains("publsh"));
        let p: ApprovalPolicy = toml::from_str("timeout_seconds = 0\n").unwrap();
        assert!(p.validate().is_err());
        assert!(toml::from_str::<ApprovalPolicy>("decide = \"anyone\"\n").is_err());
    }

    #[test]
    fn keys_and_non_admins_never_decide() {
        assert_eq!(decider_label("cli", None).unwrap(), "cli");
        let admin = Actor::User {
            email: "a@example.com".into(),
            roles: vec![Role::Admin],
            restrictions: Default::default(),
        };
        assert_eq!(decider_label("cli", Some(&admin)).unwrap(), admin.label());
        let editor = Actor::User {
            email: "e@example.com".into(),
            roles: vec![Role::Editor],
            restrictions: Default::default(),
        };
        for a in [
            editor,
            key(vec![Role::Admin], None),
            Actor::Synthetic {
                roles: vec![Role::Admin],
            },
        ] {
            assert_eq!(
                decider_label("cli", Some(&a)).unwrap_err().code,
                Code::APPROVAL_DECIDER_INVALID
            );
        }
    }
}
