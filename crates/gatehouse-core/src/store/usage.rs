//! SQL for key usage: tool calls by actor and tool over a window, counted
//! from the audit log's `mcp.tool_call` entries (every call has one).

use sqlx::AssertSqlSafe;

use super::Store;
use crate::error::Result;

/// One actor's calls of one tool since `week_start`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ToolCalls {
    pub actor: String,
    pub tool: String,
    pub week: i64,
    pub day: i64,
    pub refused_week: i64,
    pub refused_day: i64,
    pub last_at: i64,
}

/// A refusal as the audit detail spells it: the permission layer's, a key
/// restriction's, a key that stopped working, or a held call nobody approved. The detail is compact JSON
/// written by `tools::record`, so a substring test is exact (`_` in a
/// pattern matches itself among these codes).
const REFUSED: &str = "(a.detail LIKE '%\"code\":\"PERMISSION_DENIED\"%' \
     OR a.detail LIKE '%\"code\":\"KEY_TOOL_NOT_ALLOWED\"%' \
     OR a.detail LIKE '%\"code\":\"KEY_READ_ONLY\"%' \
     OR a.detail LIKE '%\"code\":\"KEY_SCOPE_CONTENT\"%' \
     OR a.detail LIKE '%\"code\":\"KEY_RATE_LIMITED\"%' \
     OR a.detail LIKE '%\"code\":\"ACTOR_API_KEY_INVALID\"%' \
     OR a.detail LIKE '%\"code\":\"APPROVAL_%')";

/// Calls by actor (those starting with `prefix`, which holds no `%` or `_`) and tool since `week_start`,
/// with the part since `day_start`.
pub async fn tool_calls(
    store: &Store,
    action: &str,
    prefix: &str,
    week_start: i64,
    day_start: i64,
) -> Result<Vec<ToolCalls>> {
    let sql = &format!(
        "SELECT a.actor AS actor, a.subject AS tool,
                COUNT(*) AS week,
                SUM(CASE WHEN a.ts >= $3 THEN 1 ELSE 0 END) AS day,
                SUM(CASE WHEN {REFUSED} THEN 1 ELSE 0 END) AS refused_week,
                SUM(CASE WHEN a.ts >= $3 AND {REFUSED} THEN 1 ELSE 0 END) AS refused_day,
                MAX(a.ts) AS last_at
         FROM audit_log a
         WHERE a.action = $4 AND a.actor LIKE $1 AND a.ts >= $2
         GROUP BY a.actor, a.subject
         ORDER BY a.actor, a.subject"
    );
    // The prefixes used (`key:`) hold no LIKE wildcard.
    let like = format!("{prefix}%");
    let like = &like;
    store
        .read("counting key usage", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(like)
                .bind(week_start)
                .bind(day_start)
                .bind(action)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// The detail of each actor's newest `action` entry since `since` (actors
/// starting with `prefix`, which holds no `%` or `_`): where it came from is in it.
pub async fn last_calls(
    store: &Store,
    action: &str,
    prefix: &str,
    since: i64,
) -> Result<Vec<(String, String)>> {
    let like = format!("{prefix}%");
    let like = &like;
    store
        .read("reading the last call of each key", |pool| async move {
            sqlx::query_as(
                "SELECT a.actor, a.detail FROM audit_log a
                 JOIN (SELECT actor, MAX(seq) AS seq FROM audit_log
                       WHERE action = $3 AND actor LIKE $1 AND ts >= $2
                       GROUP BY actor) m ON a.seq = m.seq",
            )
            .bind(like)
            .bind(since)
            .bind(action)
            .fetch_all(&pool)
            .await
        })
        .await
}

/// One actor's calls in one day-long bucket.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DayCalls {
    pub actor: String,
    /// Whole days since `start` (0 is the oldest bucket).
    pub bucket: i64,
    pub calls: i64,
    pub refused: i64,
}

/// Calls by actor (those starting with `prefix`, which holds no `%` or `_`)
/// in day-long buckets counted from `start`.
pub async fn calls_by_day(
    store: &Store,
    action: &str,
    prefix: &str,
    start: i64,
    day_ms: i64,
) -> Result<Vec<DayCalls>> {
    let sql = &format!(
        "SELECT a.actor AS actor, (a.ts - $2) / $3 AS bucket,
                COUNT(*) AS calls,
                SUM(CASE WHEN {REFUSED} THEN 1 ELSE 0 END) AS refused
         FROM audit_log a
         WHERE a.action = $4 AND a.actor LIKE $1 AND a.ts >= $2
         GROUP BY a.actor, bucket
         ORDER BY a.actor, bucket"
    );
    let like = format!("{prefix}%");
    let like = &like;
    store
        .read("counting key calls by day", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(like)
                .bind(start)
                .bind(day_ms)
                .bind(action)
                .fetch_all(&pool)
                .await
        })
        .await
}
