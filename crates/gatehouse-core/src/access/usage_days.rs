//! Each key's calls per day over the last week, for the Keys screen's chart:
//! seven day-long buckets ending now (the last one is the same 24 hours as
//! [`crate::access::key_usage`]'s day), counted from the audit log like the
//! rest of the usage.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::access::audit::{AuditAction, AuditActor};
use crate::access::key_usage::{DAY_MS, WEEK_MS};
use crate::error::Result;
use crate::store::{Store, usage as sql};

/// How many buckets a week has.
pub const DAYS: usize = 7;

/// One day-long bucket of a key's calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct DayUsage {
    /// Where the bucket starts; it ends 24 hours later.
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub start: i64,
    /// Every call, refused ones included.
    pub calls: i64,
    pub refused: i64,
}

/// The seven empty buckets of the week before `now`, oldest first.
pub fn empty_week(now: i64) -> Vec<DayUsage> {
    let start = now - WEEK_MS;
    (0..DAYS as i64)
        .map(|i| DayUsage {
            start: start + i * DAY_MS,
            calls: 0,
            refused: 0,
        })
        .collect()
}

/// Every key that called in the week before `now`: its seven buckets.
pub async fn by_key(store: &Store, now: i64) -> Result<BTreeMap<String, Vec<DayUsage>>> {
    let rows = sql::calls_by_day(
        store,
        AuditAction::McpToolCall.as_str(),
        AuditActor::KEY_PREFIX,
        now - WEEK_MS,
        DAY_MS,
    )
    .await?;
    Ok(fold(rows, now))
}

fn fold(rows: Vec<sql::DayCalls>, now: i64) -> BTreeMap<String, Vec<DayUsage>> {
    let mut out: BTreeMap<String, Vec<DayUsage>> = BTreeMap::new();
    for r in rows {
        let Ok(AuditActor::Key(id)) = r.actor.parse::<AuditActor>() else {
            continue;
        };
        // A call made at `now` exactly falls one past the last bucket: count it in the last.
        let Ok(i) = usize::try_from(r.bucket.min(DAYS as i64 - 1)) else {
            continue;
        };
        let week = out.entry(id.to_string()).or_insert_with(|| empty_week(now));
        week[i].calls += r.calls;
        week[i].refused += r.refused;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(actor: &str, bucket: i64, calls: i64, refused: i64) -> sql::DayCalls {
        sql::DayCalls {
            actor: actor.into(),
            bucket,
            calls,
            refused,
        }
    }

    #[test]
    fn buckets_fill_oldest_first_and_other_actors_are_skipped() {
        let now = 100 * DAY_MS;
        let got = fold(
            vec![
                row("key:a", 0, 2, 1),
                row("key:a", 6, 5, 0),
                row("key:a", 7, 1, 1),
                row("user:x", 3, 9, 0),
            ],
            now,
        );
        assert_eq!(got.len(), 1);
        let a = &got["a"];
        assert_eq!(a.len(), DAYS);
        assert_eq!(a[0].start, now - WEEK_MS);
        assert_eq!(a[6].start, now - DAY_MS);
        let calls: Vec<i64> = a.iter().map(|d| d.calls).collect();
        assert_eq!(calls, [2, 0, 0, 0, 0, 0, 6]);
        assert_eq!((a[0].refused, a[6].refused), (1, 1));
    }
}
