//! Keys as the Keys screen lists them: each key's status, a warning when it
//! has expired or expires within [`EXPIRY_WARNING_MS`], and how often it was
//! used.
//!
//! Uses are counted from the audit log, not kept in a counter: every call a
//! key's actor makes is audited with actor `key:<id>` (no call without an
//! audit entry), so the log already holds the count, and verification stays
//! free of an extra write per call. `last_used_at` is the later of the
//! newest such entry and the key's own (once-a-minute) verification stamp.

use std::collections::HashMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::access::audit::AuditActor;
use crate::access::keys::{self, KeyInfo, KeyStatus};
use crate::error::{Error, Result, codes};
use crate::store::{Store, audit as audit_sql};
use crate::time::now_ms;

/// How long before its expiry a key is flagged (7 days).
pub const EXPIRY_WARNING_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// What the Keys screen warns about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ExpiryWarning {
    /// The key no longer works.
    Expired,
    /// The key stops working within [`EXPIRY_WARNING_MS`].
    ExpiresSoon,
}

/// The warning for `info` at `now`, if any (never for a revoked key).
pub fn expiry_warning(info: &KeyInfo, now: i64) -> Option<ExpiryWarning> {
    if info.revoked_at.is_some() {
        return None;
    }
    let at = info.expires_at?;
    if at <= now {
        Some(ExpiryWarning::Expired)
    } else if at - now <= EXPIRY_WARNING_MS {
        Some(ExpiryWarning::ExpiresSoon)
    } else {
        None
    }
}

/// One key with its uses and warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct KeyOverview {
    #[serde(flatten)]
    #[ts(flatten)]
    pub info: KeyInfo,
    /// Audited calls made with the key.
    pub uses: i64,
    pub warning: Option<ExpiryWarning>,
}

/// Which keys the list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum KeyFilter {
    #[default]
    All,
    Active,
    /// Active keys that expire within the warning period.
    ExpiresSoon,
    Expired,
    Revoked,
}

impl FromStr for KeyFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim() {
            "" | "all" => KeyFilter::All,
            "active" => KeyFilter::Active,
            "expires_soon" => KeyFilter::ExpiresSoon,
            "expired" => KeyFilter::Expired,
            "revoked" => KeyFilter::Revoked,
            other => {
                return Err(Error::invalid(
                    codes::INPUT_INVALID,
                    format!("unknown key filter {other:?}"),
                    "filter by all, active, expires_soon, expired or revoked",
                ));
            }
        })
    }
}

impl KeyFilter {
    pub fn matches(self, key: &KeyOverview) -> bool {
        match self {
            KeyFilter::All => true,
            KeyFilter::Active => key.info.status == KeyStatus::Active,
            KeyFilter::ExpiresSoon => key.warning == Some(ExpiryWarning::ExpiresSoon),
            KeyFilter::Expired => key.info.status == KeyStatus::Expired,
            KeyFilter::Revoked => key.info.status == KeyStatus::Revoked,
        }
    }
}

/// Joins keys with their use counts (by actor label, [`AuditActor::Key`]).
pub fn overview(
    keys: Vec<KeyInfo>,
    activity: &[(String, i64, i64)],
    now: i64,
    filter: KeyFilter,
) -> Vec<KeyOverview> {
    let used: HashMap<&str, (i64, i64)> = activity
        .iter()
        .filter_map(|(actor, n, last)| {
            Some((actor.strip_prefix(AuditActor::KEY_PREFIX)?, (*n, *last)))
        })
        .collect();
    keys.into_iter()
        .map(|mut info| {
            let (uses, last) = used.get(info.id.as_str()).copied().unwrap_or((0, 0));
            if uses > 0 {
                info.last_used_at = Some(info.last_used_at.map_or(last, |t| t.max(last)));
            }
            KeyOverview {
                warning: expiry_warning(&info, now),
                uses,
                info,
            }
        })
        .filter(|k| filter.matches(k))
        .collect()
}

/// Every key of the site matching `filter`, with uses and warnings.
pub async fn list(store: &Store, filter: KeyFilter) -> Result<Vec<KeyOverview>> {
    let keys = keys::list(store).await?;
    let activity = audit_sql::activity(store, AuditActor::KEY_PREFIX).await?;
    Ok(overview(keys, &activity, now_ms(), filter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::permissions::Role;

    const DAY: i64 = 24 * 60 * 60 * 1000;

    fn key(id: &str, expires_at: Option<i64>, revoked_at: Option<i64>, now: i64) -> KeyInfo {
        let status = if revoked_at.is_some() {
            KeyStatus::Revoked
        } else if expires_at.is_some_and(|e| e <= now) {
            KeyStatus::Expired
        } else {
            KeyStatus::Active
        };
        KeyInfo {
            id: id.into(),
            label: id.into(),
            roles: vec![Role::Viewer],
            created_at: 0,
            expires_at,
            last_used_at: None,
            revoked_at,
            replaced_by: None,
            status,
            restrictions: Default::default(),
        }
    }

    #[test]
    fn warnings_at_the_edges_of_the_period() {
        let now = 100 * DAY;
        let w = |exp| expiry_warning(&key("k", exp, None, now), now);
        assert_eq!(w(None), None);
        assert_eq!(w(Some(now + 7 * DAY + 1)), None);
        assert_eq!(w(Some(now + 7 * DAY)), Some(ExpiryWarning::ExpiresSoon));
        assert_eq!(w(Some(now + 1)), Some(ExpiryWarning::ExpiresSoon));
        assert_eq!(w(Some(now)), Some(ExpiryWarning::Expired));
        assert_eq!(w(Some(now - DAY)), Some(ExpiryWarning::Expired));
        let revoked = key("r", Some(now + DAY), Some(now - 1), now);
        assert_eq!(
            expiry_warning(&revoked, now),
            None,
            "revoked keys are not warned about"
        );
    }

    #[test]
    fn uses_come_from_the_key_actor_and_filters_select() {
        let now = 100 * DAY;
        let keys = vec![
            key("aaa", None, None, now),
            key("bbb", Some(now + DAY), None, now),
            key("ccc", Some(now - DAY), None, now),
            key("ddd", None, Some(now - DAY), now),
        ];
        let activity = vec![
            ("key:aaa".to_string(), 3, now - 10),
            ("user:aaa".to_string(), 99, now),
            ("key:ddd".to_string(), 1, now - DAY - 5),
        ];
        let all = overview(keys.clone(), &activity, now, KeyFilter::All);
        assert_eq!(all.len(), 4);
        assert_eq!((all[0].uses, all[0].info.last_used_at), (3, Some(now - 10)));
        assert_eq!((all[1].uses, all[1].info.last_used_at), (0, None));
        assert_eq!(all[3].uses, 1);
        let ids = |f: KeyFilter| {
            overview(keys.clone(), &activity, now, f)
                .into_iter()
                .map(|k| k.info.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(KeyFilter::Active), ["aaa", "bbb"]);
        assert_eq!(ids(KeyFilter::ExpiresSoon), ["bbb"]);
        assert_eq!(ids(KeyFilter::Expired), ["ccc"]);
        assert_eq!(ids(KeyFilter::Revoked), ["ddd"]);
    }

    #[test]
    fn filters_parse_and_refuse() {
        assert_eq!("".parse::<KeyFilter>().unwrap(), KeyFilter::All);
        assert_eq!(
            "expires_soon".parse::<KeyFilter>().unwrap(),
            KeyFilter::ExpiresSoon
        );
        assert_eq!(
            "nope".parse::<KeyFilter>().unwrap_err().code,
            codes::INPUT_INVALID
        );
    }

    #[test]
    fn serializes_flat_for_the_page() {
        let now = 100 * DAY;
        let k = overview(
            vec![key("aaa", Some(now + DAY), None, now)],
            &[],
            now,
            KeyFilter::All,
        );
        let v = serde_json::to_value(&k[0]).unwrap();
        assert_eq!(v["id"], "aaa");
        assert_eq!(v["uses"], 0);
        assert_eq!(v["warning"], "expires_soon");
    }
}
