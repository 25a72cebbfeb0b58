//! What the audit log says every key and user should be now, to check an
//! export before import.
//!
//! The chain of an export can be intact while its tables were edited (a key's
//! roles raised, a revocation cleared): the chain has no secret and the
//! tables are not in it. Replaying the security actions (those
//! [`AuditAction`]s that change a key or a user; the match below is
//! exhaustive, so a new action needs a decision here) gives the state each key
//! and user must have; [`check`] names the first that differs. An action this
//! build does not know is refused: it might have changed a key.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::access::audit::AuditAction;
use crate::error::{Error, Result, codes};
use crate::site::portable::{AuditEntryRecord, Dump};

#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyState {
    roles: String,
    label: String,
    expires_at: Option<i64>,
    revoked: bool,
    replaced_by: Option<String>,
    /// As the log last set them (`null`: none).
    restrictions: Value,
}

/// Keys by id and users (by normalised email) as the log says they are.
#[derive(Debug, Default)]
struct State {
    keys: BTreeMap<String, KeyState>,
    users: BTreeMap<String, String>,
    /// Users the log says are disabled now.
    disabled: std::collections::BTreeSet<String>,
}

fn replay(entries: &[AuditEntryRecord]) -> Result<State> {
    let mut s = State::default();
    for e in entries {
        let d: Value = serde_json::from_str(&e.detail).unwrap_or(Value::Null);
        let text = |k: &str| d[k].as_str().map(str::to_string);
        let bad = || {
            tampered(format!(
                "audit entry {} ({}) lacks the detail it should have",
                e.seq, e.action
            ))
        };
        use AuditAction::*;
        match AuditAction::parse_stored(&e.action, e.seq)? {
            KeyMint => {
                s.keys.insert(
                    e.subject.clone(),
                    KeyState {
                        roles: text("roles").ok_or_else(bad)?,
                        label: text("label").ok_or_else(bad)?,
                        expires_at: d["expires_at"].as_i64(),
                        revoked: false,
                        replaced_by: None,
                        restrictions: d["restrictions"].clone(),
                    },
                );
            }
            KeyRestrict => {
                if let Some(k) = s.keys.get_mut(&e.subject) {
                    k.restrictions = d.get("restrictions").cloned().ok_or_else(bad)?;
                }
            }
            KeyRevoke => {
                if let Some(k) = s.keys.get_mut(&e.subject) {
                    k.revoked = true;
                }
            }
            KeyRoll => {
                let new_id = text("replaced_by").ok_or_else(bad)?;
                if let Some(old) = s.keys.get_mut(&e.subject) {
                    old.replaced_by = Some(new_id.clone());
                    old.expires_at = d["old_expires_at"].as_i64();
                    let new = KeyState {
                        roles: old.roles.clone(),
                        label: old.label.clone(),
                        expires_at: None,
                        revoked: false,
                        replaced_by: None,
                        restrictions: old.restrictions.clone(),
                    };
                    s.keys.insert(new_id, new);
                }
            }
            SiteSeed => {
                for role in crate::site::seed::SAMPLE_ROLES {
                    s.users
                        .insert(format!("{role}@example.com"), role.to_string());
                }
            }
            UserCreate | UserSetRoles => {
                s.users.insert(
                    e.subject.trim().to_lowercase(),
                    text("roles").ok_or_else(bad)?,
                );
            }
            UserDelete => {
                let email = e.subject.trim().to_lowercase();
                s.users.remove(&email);
                s.disabled.remove(&email);
            }
            UserDisable => {
                s.disabled.insert(e.subject.trim().to_lowercase());
            }
            UserEnable => {
                s.disabled.remove(&e.subject.trim().to_lowercase());
            }
            // Neither a key nor a user changes (a display name is not a
            // permission).
            UserSetDisplayName
            | SiteConfigSet
            | SiteConfigUnset
            | ContentCreate
            | ContentRevise
            | ContentUpdate
            | ContentPublish
            | ContentDelete
            | MediaUpload
            | McpToolCall
            | HttpFetch
            | McpClientCall
            | ConnectionAdd
            | ConnectionEdit
            | ConnectionRemove
            | ConnectionConsent
            | ConnectionToolsPinned
            | ConnectionToolsChanged
            | ConnectionToolsHeld
            | ConnectionToolsApproved => {}
            // OAuth grants act for a key and are refused with it; they do not
            // change a key or a user.
            OauthApprove | OauthPairApprove | OauthDeny | OauthGrant | OauthExpire | OauthReuse
            | OauthRevoke => {}
            // A refused use changes nothing.
            KeyNetworkRefused => {}
            // A held call's decision changes neither its key nor a user.
            ApprovalAsked | ApprovalApproved | ApprovalDenied | ApprovalDeclined
            | ApprovalTimeout | ApprovalAbandoned => {}
        }
    }
    Ok(s)
}

/// The config keys the log last set with the `secret` mark (and did not
/// remove since).
pub fn secret_config(entries: &[AuditEntryRecord]) -> std::collections::BTreeSet<String> {
    let mut marked = std::collections::BTreeSet::new();
    for e in entries {
        match AuditAction::parse_stored(&e.action, e.seq) {
            Ok(AuditAction::SiteConfigSet) => {
                let d: Value = serde_json::from_str(&e.detail).unwrap_or(Value::Null);
                if d["secret"] == Value::Bool(true) {
                    marked.insert(e.subject.clone());
                } else {
                    marked.remove(&e.subject);
                }
            }
            Ok(AuditAction::SiteConfigUnset) => {
                marked.remove(&e.subject);
            }
            _ => {}
        }
    }
    marked
}

fn tampered(message: String) -> Error {
    Error::new(codes::IMPORT_TAMPERED, message).hint(
        "the export's keys or users were edited after it was made; export again from the original site and keep the file where others cannot write",
    )
}

/// Refuses a dump whose keys or users differ from what its audit log says.
pub fn check(d: &Dump) -> Result<()> {
    let mut want = replay(&d.audit.entries)?;
    for k in &d.keys {
        let Some(w) = want.keys.remove(&k.id) else {
            return Err(tampered(format!(
                "key {} is not in the audit log (no key.mint entry): it was added to the export",
                k.id
            )));
        };
        let mismatch = |what: &str, log: String, file: String| {
            tampered(format!(
                "key {} has {what} {file} in the export but {log} by the audit log",
                k.id
            ))
        };
        if w.roles != k.roles {
            return Err(mismatch("roles", w.roles, k.roles.clone()));
        }
        if w.revoked != k.revoked_at.is_some() {
            let says = |r: bool| if r { "revoked" } else { "not revoked" }.to_string();
            return Err(mismatch(
                "revoked state",
                says(w.revoked),
                says(k.revoked_at.is_some()),
            ));
        }
        if w.label != k.label {
            return Err(mismatch("label", w.label, k.label.clone()));
        }
        if w.expires_at != k.expires_at {
            return Err(mismatch(
                "expiry",
                format!("{:?}", w.expires_at),
                format!("{:?}", k.expires_at),
            ));
        }
        let stored: Value = match &k.restrictions {
            None => Value::Null,
            Some(text) => serde_json::from_str(text).unwrap_or(Value::Bool(false)),
        };
        if w.restrictions != stored {
            return Err(mismatch(
                "restrictions",
                w.restrictions.to_string(),
                stored.to_string(),
            ));
        }
        if w.replaced_by != k.replaced_by {
            return Err(mismatch(
                "replacement",
                format!("{:?}", w.replaced_by),
                format!("{:?}", k.replaced_by),
            ));
        }
    }
    if let Some(id) = want.keys.keys().next() {
        return Err(tampered(format!(
            "key {id} was minted according to the audit log but is missing from the export"
        )));
    }
    for u in &d.users {
        let email = u.email.trim().to_lowercase();
        match want.users.remove(&email) {
            None => {
                return Err(tampered(format!(
                    "user {email} is not in the audit log (no user.create entry): it was added to the export"
                )));
            }
            Some(roles) if roles != u.roles => {
                return Err(tampered(format!(
                    "user {email} has roles {} in the export but {roles} by the audit log",
                    u.roles
                )));
            }
            Some(_) => {}
        }
        let says = |d: bool| if d { "disabled" } else { "enabled" };
        let logged = want.disabled.contains(&email);
        if logged != u.disabled_at.is_some() {
            return Err(tampered(format!(
                "user {email} is {} in the export but {} by the audit log",
                says(u.disabled_at.is_some()),
                says(logged)
            )));
        }
    }
    if let Some(email) = want.users.keys().next() {
        return Err(tampered(format!(
            "user {email} exists according to the audit log but is missing from the export"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64, action: &str, subject: &str, detail: serde_json::Value) -> AuditEntryRecord {
        AuditEntryRecord {
            seq,
            ts: seq,
            actor: "cli".into(),
            action: action.into(),
            subject: subject.into(),
            detail: detail.to_string(),
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    /// Driven by the enum: every action any build writes is one the replay
    /// reads (a key or user change, or a decided no-op), and a name it does
    /// not know stops the import, since it might have changed a key.
    #[test]
    fn the_replay_reads_every_audit_action_and_refuses_an_unknown_one() {
        let full = serde_json::json!({
            "roles": "editor", "label": "l", "replaced_by": "k2", "restrictions": null,
        });
        let mut seq = 0;
        for action in AuditAction::all() {
            seq += 1;
            let subject = if action.as_str().starts_with("user.") {
                "a@b.example"
            } else {
                "k1"
            };
            replay(&[
                entry(seq, "key.mint", "k1", full.clone()),
                entry(seq + 1, action.as_str(), subject, full.clone()),
            ])
            .unwrap_or_else(|e| panic!("{action}: {e:?}"));
        }
        let s = replay(&[
            entry(1, "key.mint", "k1", full.clone()),
            entry(2, "key.revoke", "k1", serde_json::json!({})),
            entry(3, "user.create", "A@b.example", full.clone()),
            entry(4, "user.disable", "a@b.example", serde_json::json!({})),
        ])
        .unwrap();
        assert!(s.keys["k1"].revoked);
        assert_eq!(s.users["a@b.example"], "editor");
        assert!(s.disabled.contains("a@b.example"));

        let e = replay(&[entry(9, "key.unrevoke", "k1", serde_json::json!({}))]).unwrap_err();
        assert_eq!(e.code, codes::STORED_VALUE_UNKNOWN);
        assert!(
            e.message.contains("key.unrevoke") && e.message.contains("entry 9"),
            "{}",
            e.message
        );
    }
}
