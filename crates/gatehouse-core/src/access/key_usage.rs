//! What each key (and each OAuth grant, [`of_grant`]) did lately: its last call, its calls by tool over the last
//! day and week, and how many were refused (by its roles or restrictions,
//! or because it had stopped working). Counted from the audit log, where
//! every tool call has its entry, so nothing is kept twice (see
//! [`crate::access::key_overview`] for the same choice).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::access::audit::{AuditAction, AuditActor};
use crate::error::Result;
use crate::store::{Store, usage as sql};

pub const DAY_MS: i64 = 24 * 60 * 60 * 1000;
pub const WEEK_MS: i64 = 7 * DAY_MS;

/// One tool's calls by one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ToolUsage {
    pub tool: String,
    pub day: i64,
    pub week: i64,
    pub refused_day: i64,
    pub refused_week: i64,
}

/// One key's calls over the last day and week, at the time of reading.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct KeyUsage {
    /// The newest call within the week, if any.
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub last_call_at: Option<i64>,
    /// Where the newest call came from: `stdio` and the client's name, or
    /// the HTTP client's address (calls recorded before this was kept have none).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_from: Option<String>,
    pub calls_day: i64,
    pub calls_week: i64,
    pub refused_day: i64,
    pub refused_week: i64,
    /// By tool, most called first.
    pub by_tool: Vec<ToolUsage>,
}

/// Usage of every key that made a call in the week before `now`, by key id.
pub async fn by_key(store: &Store, now: i64) -> Result<BTreeMap<String, KeyUsage>> {
    let rows = sql::tool_calls(
        store,
        AuditAction::McpToolCall.as_str(),
        AuditActor::KEY_PREFIX,
        now - WEEK_MS,
        now - DAY_MS,
    )
    .await?;
    let mut out = fold(rows);
    for (actor, detail) in sql::last_calls(
        store,
        AuditAction::McpToolCall.as_str(),
        AuditActor::KEY_PREFIX,
        now - WEEK_MS,
    )
    .await?
    {
        let from = last_from(&detail);
        if let (Ok(AuditActor::Key(id)), Some(from)) = (actor.parse::<AuditActor>(), from)
            && let Some(u) = out.get_mut(&id)
        {
            u.last_from = Some(from);
        }
    }
    Ok(out)
}

fn fold(rows: Vec<sql::ToolCalls>) -> BTreeMap<String, KeyUsage> {
    let mut out: BTreeMap<String, KeyUsage> = BTreeMap::new();
    for r in rows {
        let Ok(AuditActor::Key(id)) = r.actor.parse::<AuditActor>() else {
            continue;
        };
        out.entry(id.to_string()).or_default().add(r);
    }
    for u in out.values_mut() {
        u.sort();
    }
    out
}

/// Usage of the calls made through OAuth grant `grant_id` in the week
/// before `now` (by whichever actor the grant acts as).
pub async fn of_grant(store: &Store, grant_id: &str, now: i64) -> Result<KeyUsage> {
    let action = AuditAction::McpToolCall.as_str();
    let mut u = KeyUsage::default();
    for r in sql::grant_tool_calls(store, action, grant_id, now - WEEK_MS, now - DAY_MS).await? {
        u.add(r);
    }
    u.sort();
    if u.calls_week > 0
        && let Some(detail) = sql::grant_last_call(store, action, grant_id, now - WEEK_MS).await?
    {
        u.last_from = last_from(&detail);
    }
    Ok(u)
}

/// Where a call came from, as its audit detail says.
fn last_from(detail: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(detail)
        .ok()
        .and_then(|d| d.get("from")?.as_str().map(str::to_string))
        .filter(|f| !f.is_empty())
}

impl KeyUsage {
    /// Adds one tool's row.
    fn add(&mut self, r: sql::ToolCalls) {
        self.last_call_at = Some(self.last_call_at.map_or(r.last_at, |t| t.max(r.last_at)));
        self.calls_day += r.day;
        self.calls_week += r.week;
        self.refused_day += r.refused_day;
        self.refused_week += r.refused_week;
        self.by_tool.push(ToolUsage {
            tool: r.tool,
            day: r.day,
            week: r.week,
            refused_day: r.refused_day,
            refused_week: r.refused_week,
        });
    }

    /// Most called tool first.
    fn sort(&mut self) {
        self.by_tool
            .sort_by(|a, b| b.week.cmp(&a.week).then_with(|| a.tool.cmp(&b.tool)));
    }

    /// In one line: "24h: 5 calls (1 refused); 7d: 9 calls (1 refused); content_read 6, content_list 3".
    pub fn summary(&self) -> String {
        if self.calls_week == 0 {
            return "no calls in 7 days".into();
        }
        let tools = self
            .by_tool
            .iter()
            .map(|t| format!("{} {}", t.tool, t.week))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "24h: {} calls ({} refused); 7d: {} calls ({} refused); {tools}",
            self.calls_day, self.refused_day, self.calls_week, self.refused_week
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        actor: &str,
        tool: &str,
        week: i64,
        day: i64,
        refused: i64,
        last: i64,
    ) -> sql::ToolCalls {
        sql::ToolCalls {
            actor: actor.into(),
            tool: tool.into(),
            week,
            day,
            refused_week: refused,
            refused_day: refused.min(day),
            last_at: last,
        }
    }

    #[test]
    fn rows_fold_into_keys_with_the_busiest_tool_first() {
        let got = fold(vec![
            row("key:a", "content_list", 2, 1, 0, 10),
            row("key:a", "content_read", 5, 0, 2, 30),
            row("key:b", "content_read", 1, 1, 1, 5),
            row("user:x", "content_read", 9, 9, 0, 50),
        ]);
        assert_eq!(got.len(), 2);
        let a = &got["a"];
        assert_eq!((a.calls_week, a.calls_day, a.refused_week), (7, 1, 2));
        assert_eq!(a.last_call_at, Some(30));
        assert_eq!(a.by_tool[0].tool, "content_read");
        assert_eq!(
            a.summary(),
            "24h: 1 calls (0 refused); 7d: 7 calls (2 refused); content_read 5, content_list 2"
        );
        assert_eq!(KeyUsage::default().summary(), "no calls in 7 days");
    }
}
