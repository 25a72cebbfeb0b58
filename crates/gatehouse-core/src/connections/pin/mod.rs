//! Tool pinning: what an admin approved of a connection's tools stays what it
//! offers (a "rug pull" guard; decision "Tool pinning").
//!
//! The first successful connect records a canonical hash of the tool list
//! (names, descriptions, input schemas, annotations) with the hash of the
//! definition it came from. A later connect whose list differs is refused
//! with `CONNECTION_TOOLS_CHANGED` and a readable [`ToolsDiff`] in the error
//! detail; the offered list is kept as pending until an admin approves it
//! ([`approve`]). A `notifications/tools/list_changed` mid-session puts the
//! connection on hold the same way ([`hold`]): its calls are refused and the
//! next connects too, until approved. Pins, refusals, holds and approvals are
//! audited (`connection.tools_pinned`, `connection.tools_changed`,
//! `connection.tools_held`, `connection.tools_approved`).
//!
//! Map: [`diff`] is the pure part (the pinned form of a tool list, its hash,
//! the diff between two lists); this file holds the store-backed decisions
//! (check, hold, approve); SQL is in [`crate::store::tool_pins`].

pub mod diff;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use self::diff::{PinnedTool, ToolsDiff, snapshot, spec_hash, tools_hash};

use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::error::{Error, Result, codes};
use crate::mcp::client::ToolInfo;
use crate::sandbox::ChildSpec;
use crate::store::tool_pins::PinRow;
use crate::store::{self, Store};

/// Why a connection's tools wait for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PendingReason {
    /// A connect offered a list other than the pinned one.
    Changed,
    /// The server sent `notifications/tools/list_changed` mid-session.
    ListChanged,
    /// The connection definition is not the one the pin was made from.
    DefinitionChanged,
}

impl PendingReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReason::Changed => "changed",
            PendingReason::ListChanged => "list_changed",
            PendingReason::DefinitionChanged => "definition_changed",
        }
    }

    fn parse(s: &str) -> PendingReason {
        match s {
            "list_changed" => PendingReason::ListChanged,
            "definition_changed" => PendingReason::DefinitionChanged,
            _ => PendingReason::Changed,
        }
    }
}

/// A connection's pin as shown by `connections show` and `probe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinStatus {
    pub definition_sha256: String,
    pub tools_sha256: String,
    pub tools: usize,
    pub pinned_at_ms: i64,
    /// Set while a change waits for `gatehouse connections approve`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingReason>,
}

fn read_tools(text: &str) -> Result<Vec<PinnedTool>> {
    serde_json::from_str(text).map_err(|e| Error::storage("reading a tool pin", e))
}

fn status_of(row: &PinRow) -> Result<PinStatus> {
    Ok(PinStatus {
        definition_sha256: row.definition_sha256.clone(),
        tools_sha256: row.tools_sha256.clone(),
        tools: read_tools(&row.tools)?.len(),
        pinned_at_ms: row.pinned_at,
        pending: row.pending_reason.as_deref().map(PendingReason::parse),
    })
}

/// The pin of connection `name`, if it has one.
pub async fn status(store: &Store, name: &str) -> Result<Option<PinStatus>> {
    store::tool_pins::get(store, name)
        .await?
        .map(|r| status_of(&r))
        .transpose()
}

fn changed_error(name: &str, reason: PendingReason, diff: &ToolsDiff, detail: Value) -> Error {
    let what = match reason {
        PendingReason::Changed => "offers a tool list other than the one approved",
        PendingReason::ListChanged => {
            "announced mid-session that its tool list changed (notifications/tools/list_changed)"
        }
        PendingReason::DefinitionChanged => {
            "runs from a definition other than the one its tools were approved for"
        }
    };
    let summary = diff.summary();
    let message = if summary.is_empty() {
        format!("connection {name} {what}; it is on hold")
    } else {
        format!("connection {name} {what}; it is on hold:\n{summary}")
    };
    Error::new(codes::CONNECTION_TOOLS_CHANGED, message)
        .hint(format!(
            "review the difference (in the error detail), then approve it with `gatehouse connections approve {name}`; until then the connection's calls are refused"
        ))
        .detail(detail)
}

fn detail(
    reason: PendingReason,
    pin: &PinRow,
    offered_hash: Option<&str>,
    diff: &ToolsDiff,
) -> Value {
    json!({
        "reason": reason.as_str(),
        "pinned_sha256": pin.tools_sha256,
        "offered_sha256": offered_hash,
        "diff": diff,
    })
}

/// Checks `tools`, as offered at connect by connection `name` defined by
/// `spec`, against its pin: pins them when there is none, refuses with
/// `CONNECTION_TOOLS_CHANGED` when they differ or a change is pending.
pub async fn check(
    store: &Store,
    actor: &str,
    name: &str,
    spec: &ChildSpec,
    tools: &[ToolInfo],
) -> Result<PinStatus> {
    refuse_duplicates(name, tools)?;
    let offered = snapshot(tools);
    let offered_hash = tools_hash(&offered);
    let def_hash = spec_hash(spec);
    let now = crate::time::now_ms();
    let Some(pin) = store::tool_pins::get(store, name).await? else {
        let row = PinRow {
            name: name.to_string(),
            definition_sha256: def_hash,
            tools_sha256: offered_hash,
            tools: serde_json::to_string(&offered).expect("tools serialise"),
            pending_tools: None,
            pending_reason: None,
            pinned_at: now,
            updated_at: now,
        };
        if !pin_first(store, actor, &row, &offered).await? {
            // Another process pinned it first: check against theirs.
            return Box::pin(check(store, actor, name, spec, tools)).await;
        }
        return status_of(&row);
    };
    let pinned = read_tools(&pin.tools)?;
    let Some(reason) = pending_reason(&pin, &def_hash, &offered_hash) else {
        return status_of(&pin);
    };
    // A change already on hold is shown as the list approval pins, not the
    // one offered now: the two had differed, and an approval of a refusal
    // that showed a harmless change pinned an earlier list with a new tool.
    let held = pin.pending_tools.as_deref().map(read_tools).transpose()?;
    let shown = held.as_deref().unwrap_or(&offered);
    let the_diff = diff::diff(&pinned, shown);
    let newer = held.as_ref().is_some_and(|h| tools_hash(h) != offered_hash);
    if pin.pending_reason.is_none() {
        let mut tx = store.begin_write().await?;
        store::tool_pins::set_pending_in(
            &mut tx,
            name,
            Some(&serde_json::to_string(&offered).expect("tools serialise")),
            reason.as_str(),
            now,
        )
        .await?;
        audit::append(
            &mut tx,
            audit::AuditEntry {
                actor,
                action: AuditAction::ConnectionToolsChanged,
                subject: name,
                detail: detail(reason, &pin, Some(&offered_hash), &the_diff),
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(|e| Error::storage("recording a tool list change", e))?;
    }
    let mut refused = changed_error(
        name,
        reason,
        &the_diff,
        detail(reason, &pin, Some(&tools_hash(shown)), &the_diff),
    );
    if newer {
        refused.message.push_str(&format!(
            "\n(it offers yet another list now: approving pins the one shown; its next connect shows the change from there, {offered_hash})"
        ));
    }
    Err(refused)
}

/// Refuses a tool list that names a tool twice (see `diff::duplicate_name`).
fn refuse_duplicates(name: &str, tools: &[ToolInfo]) -> Result<()> {
    match diff::duplicate_name(tools) {
        Some(dup) => Err(Error::new(
            codes::PROTOCOL_VIOLATION,
            format!(
                "connection {name} lists the tool {} twice; a tool list is refused whole then",
                dup.escape_debug()
            ),
        )
        .hint("a server's tool names must be unique; fix the server or remove the connection")),
        None => Ok(()),
    }
}

/// Pins a connection's first tool list, audited; false when another process
/// pinned one first (nothing written).
async fn pin_first(
    store: &Store,
    actor: &str,
    row: &PinRow,
    offered: &[PinnedTool],
) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    if !store::tool_pins::insert_in(&mut tx, row).await? {
        return Ok(false);
    }
    audit::append(
        &mut tx,
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionToolsPinned,
            subject: &row.name,
            detail: json!({
                "definition_sha256": row.definition_sha256,
                "tools_sha256": row.tools_sha256,
                "tools": offered.iter().map(|t| &t.name).collect::<Vec<_>>(),
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("pinning a connection's tools", e))?;
    Ok(true)
}

/// Why a connect must wait for approval, if it must: a change still on hold
/// first, then another definition, then another tool list.
fn pending_reason(pin: &PinRow, def_hash: &str, offered_hash: &str) -> Option<PendingReason> {
    if let Some(r) = pin.pending_reason.as_deref() {
        // Still on hold: the diff shown is the one waiting for approval.
        Some(PendingReason::parse(r))
    } else if pin.definition_sha256 != def_hash {
        Some(PendingReason::DefinitionChanged)
    } else if pin.tools_sha256 != offered_hash {
        Some(PendingReason::Changed)
    } else {
        None
    }
}

/// Whether `tools` are connection `name`'s pinned list, with no change
/// waiting for approval.
pub async fn is_pinned(store: &Store, name: &str, tools: &[ToolInfo]) -> Result<bool> {
    let offered = tools_hash(&snapshot(tools));
    Ok(store::tool_pins::get(store, name)
        .await?
        .is_some_and(|p| p.pending_reason.is_none() && p.tools_sha256 == offered))
}

/// Puts connection `name` on hold after it announced a tool list change
/// mid-session; `relisted` is its list after the announcement, when it could
/// be read. Returns the error its calls are refused with.
pub async fn hold(
    store: &Store,
    actor: &str,
    name: &str,
    relisted: Option<&[ToolInfo]>,
) -> Result<Error> {
    let Some(pin) = store::tool_pins::get(store, name).await? else {
        return Err(Error::new(
            codes::CONNECTION_TOOLS_CHANGED,
            format!("connection {name} changed its tools before any were pinned"),
        ));
    };
    // A list naming a tool twice cannot be shown whole: held as unreadable.
    let offered = relisted
        .filter(|r| diff::duplicate_name(r).is_none())
        .map(snapshot);
    let the_diff = offered
        .as_ref()
        .map(|o| Ok::<_, Error>(diff::diff(&read_tools(&pin.tools)?, o)))
        .transpose()?
        .unwrap_or_default();
    let offered_hash = offered.as_ref().map(|o| tools_hash(o));
    let d = detail(
        PendingReason::ListChanged,
        &pin,
        offered_hash.as_deref(),
        &the_diff,
    );
    if pin.pending_reason.is_none() {
        let mut tx = store.begin_write().await?;
        store::tool_pins::set_pending_in(
            &mut tx,
            name,
            offered
                .as_ref()
                .map(|o| serde_json::to_string(o).expect("tools serialise"))
                .as_deref(),
            PendingReason::ListChanged.as_str(),
            crate::time::now_ms(),
        )
        .await?;
        audit::append(
            &mut tx,
            audit::AuditEntry {
                actor,
                action: AuditAction::ConnectionToolsHeld,
                subject: name,
                detail: d.clone(),
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(|e| Error::storage("putting a connection on hold", e))?;
    }
    Ok(changed_error(
        name,
        PendingReason::ListChanged,
        &the_diff,
        d,
    ))
}

/// What an approval did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approval {
    pub name: String,
    pub reason: PendingReason,
    pub previous_sha256: String,
    /// The newly pinned list's hash; `None` when the list after a mid-session
    /// change could not be read (the old pin stays; the next connect's list
    /// is checked against it).
    pub approved_sha256: Option<String>,
    pub diff: ToolsDiff,
}

/// Approves connection `name`'s pending tool list (the one shown in the
/// refusal, never whatever the server offers next), audited as
/// `connection.tools_approved` by `actor`.
pub async fn approve(store: &Store, actor: &str, name: &str, spec: &ChildSpec) -> Result<Approval> {
    let pin = store::tool_pins::get(store, name).await?;
    let Some(pin) = pin.filter(|p| p.pending_reason.is_some()) else {
        return Err(Error::invalid(
            codes::CONNECTION_NOTHING_TO_APPROVE,
            format!("connection {name} has no tool change waiting for approval"),
            format!("`gatehouse connections show {name}` shows its pin"),
        ));
    };
    let reason = PendingReason::parse(pin.pending_reason.as_deref().unwrap_or_default());
    let pending = pin.pending_tools.as_deref().map(read_tools).transpose()?;
    let the_diff = match &pending {
        Some(p) => diff::diff(&read_tools(&pin.tools)?, p),
        None => ToolsDiff::default(),
    };
    let approved_sha256 = pending.as_ref().map(|p| tools_hash(p));
    let now = crate::time::now_ms();
    let mut tx = store.begin_write().await?;
    match &pending {
        Some(p) => {
            store::tool_pins::replace_in(
                &mut tx,
                &PinRow {
                    name: name.to_string(),
                    definition_sha256: spec_hash(spec),
                    tools_sha256: tools_hash(p),
                    tools: serde_json::to_string(p).expect("tools serialise"),
                    pending_tools: None,
                    pending_reason: None,
                    pinned_at: now,
                    updated_at: now,
                },
            )
            .await?
        }
        // The list after the change could not be read, so nothing was shown
        // to approve: the hold ends and the old pin stays, so the next
        // connect's list is compared with it (and refused if it differs).
        // Deleting the pin had made that connect pin whatever came, unseen.
        None => store::tool_pins::clear_pending_in(&mut tx, name, now).await?,
    };
    audit::append(
        &mut tx,
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionToolsApproved,
            subject: name,
            detail: json!({
                "reason": reason.as_str(),
                "previous_sha256": pin.tools_sha256,
                "approved_sha256": approved_sha256,
                "diff": the_diff,
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("approving a connection's tools", e))?;
    Ok(Approval {
        name: name.to_string(),
        reason,
        previous_sha256: pin.tools_sha256,
        approved_sha256,
        diff: the_diff,
    })
}
