//! SQL for key usage: tool calls by actor and tool over a window, counted
//! from the audit log's `mcp.tool_call` entries (every call has one).

use sqlx::AssertSqlSafe;

use super::Store;
use crate::error::{Code, Result};

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

/// The codes of a refused call as the audit detail spells them: the
/// permission layer's, a key restriction's, an OAuth scope's, a key, token or
/// user that stopped working; and (by prefix, below) a held call nobody
/// approved.
const REFUSED_CODES: [Code; 9] = [
    Code::PERMISSION_DENIED,
    Code::KEY_TOOL_NOT_ALLOWED,
    Code::KEY_READ_ONLY,
    Code::KEY_SCOPE_CONTENT,
    Code::KEY_RATE_LIMITED,
    Code::ACTOR_API_KEY_INVALID,
    Code::OAUTH_SCOPE_INSUFFICIENT,
    Code::OAUTH_TOKEN_INVALID,
    Code::USER_DISABLED,
];

/// Whether the entry `a` is a refusal. The detail is compact JSON written by
/// `tools::record`, so a substring test is exact (`_` in a pattern matches
/// itself among these codes).
fn refused() -> String {
    let mut terms: Vec<String> = REFUSED_CODES
        .iter()
        .map(|c| format!("a.detail LIKE '%\"code\":\"{}\"%'", c.as_str()))
        .collect();
    terms.push("a.detail LIKE '%\"code\":\"APPROVAL_%'".into());
    format!("({})", terms.join(" OR "))
}

/// The calls-by-tool query both usage views run: `$1` is `filter`'s pattern, `$2` the
/// week's start, `$3` the day's, `$4` the action; rows grouped and ordered by `group`.
fn counts_sql(actor: &str, filter: &str, group: &str) -> String {
    let refused = refused();
    format!(
        "SELECT {actor} AS actor, a.subject AS tool,
                COUNT(*) AS week,
                SUM(CASE WHEN a.ts >= $3 THEN 1 ELSE 0 END) AS day,
                SUM(CASE WHEN {refused} THEN 1 ELSE 0 END) AS refused_week,
                SUM(CASE WHEN a.ts >= $3 AND {refused} THEN 1 ELSE 0 END) AS refused_day,
                MAX(a.ts) AS last_at
         FROM audit_log a
         WHERE a.action = $4 AND {filter} AND a.ts >= $2
         GROUP BY {group}
         ORDER BY {group}"
    )
}

/// Calls by actor (those starting with `prefix`, which holds no `%` or `_`) and tool since `week_start`,
/// with the part since `day_start`.
pub async fn tool_calls(
    store: &Store,
    action: &str,
    prefix: &str,
    week_start: i64,
    day_start: i64,
) -> Result<Vec<ToolCalls>> {
    let sql = &counts_sql("a.actor", "a.actor LIKE $1", "a.actor, a.subject");
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

/// [`last_calls`]'s statement: `$1` the actors' pattern, `$2` since when, `$3` the action.
const LAST_CALLS_SQL: &str = "SELECT a.actor, a.detail FROM audit_log a
     JOIN (SELECT actor, MAX(seq) AS seq FROM audit_log
           WHERE action = $3 AND actor LIKE $1 AND ts >= $2
           GROUP BY actor) m ON a.seq = m.seq";

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
            sqlx::query_as(LAST_CALLS_SQL)
                .bind(like)
                .bind(since)
                .bind(action)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// The LIKE pattern of the tool-call entries made through OAuth grant `id`
/// (`tools::record` writes `"grant":"<id>"`); `\` escapes the id's `_`.
fn grant_pattern(id: &str) -> String {
    let escaped = id
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%\"grant\":\"{escaped}\"%")
}

/// [`tool_calls`] for the calls made through one OAuth grant (whatever the
/// actor it acted as), `actor` being that actor's label.
pub async fn grant_tool_calls(
    store: &Store,
    action: &str,
    grant_id: &str,
    week_start: i64,
    day_start: i64,
) -> Result<Vec<ToolCalls>> {
    let sql = &counts_sql("MIN(a.actor)", "a.detail LIKE $1 ESCAPE '\\'", "a.subject");
    let like = &grant_pattern(grant_id);
    store
        .read("counting OAuth grant usage", |pool| async move {
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

/// [`grant_last_call`]'s statement: `$1` the grant's pattern, `$2` since when, `$3` the action.
const GRANT_LAST_CALL_SQL: &str = "SELECT a.detail FROM audit_log a
     WHERE a.action = $3 AND a.detail LIKE $1 ESCAPE '\\' AND a.ts >= $2
     ORDER BY a.seq DESC LIMIT 1";

/// The detail of the newest `action` entry through OAuth grant `grant_id`
/// since `since`.
pub async fn grant_last_call(
    store: &Store,
    action: &str,
    grant_id: &str,
    since: i64,
) -> Result<Option<String>> {
    let like = &grant_pattern(grant_id);
    store
        .read(
            "reading the last call of an OAuth grant",
            |pool| async move {
                sqlx::query_scalar(GRANT_LAST_CALL_SQL)
                    .bind(like)
                    .bind(since)
                    .bind(action)
                    .fetch_optional(&pool)
                    .await
            },
        )
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

/// [`calls_by_day`]'s statement: `$1` the actors' pattern, `$2` the first
/// bucket's start, `$3` a bucket's length, `$4` the action.
fn by_day_sql() -> String {
    let refused = refused();
    format!(
        "SELECT a.actor AS actor, (a.ts - $2) / $3 AS bucket,
                COUNT(*) AS calls,
                SUM(CASE WHEN {refused} THEN 1 ELSE 0 END) AS refused
         FROM audit_log a
         WHERE a.action = $4 AND a.actor LIKE $1 AND a.ts >= $2
         GROUP BY a.actor, bucket
         ORDER BY a.actor, bucket"
    )
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
    let sql = &by_day_sql();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement's parameters by name.
    type Named<'a> = Vec<(&'a str, &'a dyn rusqlite::ToSql)>;

    /// Runs `sql` with `params` on `conn` to its last row; returns the rows
    /// and how many virtual machine steps SQLite took for them.
    fn run_counted(
        conn: &rusqlite::Connection,
        sql: &str,
        params: &[(&str, &dyn rusqlite::ToSql)],
    ) -> (usize, i32) {
        let mut stmt = conn.prepare(sql).unwrap();
        let mut n = 0;
        let mut rows = stmt.query(params).unwrap();
        while rows.next().unwrap().is_some() {
            n += 1;
        }
        drop(rows);
        (n, stmt.get_status(rusqlite::StatementStatus::VmStep))
    }

    /// A month of old tool calls must not be read to count the last hour:
    /// on the former (action, seq) index every statement here stepped through
    /// all 20,000 old entries (over 100,000 steps each); on (action, ts) they
    /// read the window.
    #[tokio::test]
    async fn the_usage_views_read_only_their_window() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        let site = crate::site::init(&dir, Some("t"), false, None)
            .await
            .unwrap();
        site.store.close().await;
        let mut conn = rusqlite::Connection::open(dir.join(crate::site::DB_FILE)).unwrap();
        let hour_ago = 1_000_000_000_000_i64;
        let month_ago = hour_ago - 30 * 86_400_000;
        let tx = conn.transaction().unwrap();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO audit_log (ts, actor, action, subject, detail, prev_hash, hash)
                     VALUES (?1, 'key:abc', 'mcp.tool_call', 'content_read',
                             '{\"grant\":\"g1\"}', '', '')",
                )
                .unwrap();
            for i in 0..20_000 {
                insert.execute([month_ago + i]).unwrap();
            }
            for i in 0..10 {
                insert.execute([hour_ago + 1 + i]).unwrap();
            }
        }
        tx.commit().unwrap();

        let action: &dyn rusqlite::ToSql = &"mcp.tool_call";
        let (keys, grant, since, day) =
            (&"key:%", &grant_pattern("g1"), &hour_ago, &86_400_000_i64);
        let counts = counts_sql("a.actor", "a.actor LIKE $1", "a.actor, a.subject");
        let grant_counts = counts_sql("MIN(a.actor)", "a.detail LIKE $1 ESCAPE '\\'", "a.subject");
        let by_day = by_day_sql();
        let statements: [(&str, &str, Named); 5] = [
            (
                "tool_calls",
                &counts,
                vec![("$1", keys), ("$2", since), ("$3", since), ("$4", action)],
            ),
            (
                "grant_tool_calls",
                &grant_counts,
                vec![("$1", grant), ("$2", since), ("$3", since), ("$4", action)],
            ),
            (
                "last_calls",
                LAST_CALLS_SQL,
                vec![("$1", keys), ("$2", since), ("$3", action)],
            ),
            (
                "grant_last_call",
                GRANT_LAST_CALL_SQL,
                vec![("$1", grant), ("$2", since), ("$3", action)],
            ),
            (
                "calls_by_day",
                &by_day,
                vec![("$1", keys), ("$2", since), ("$3", day), ("$4", action)],
            ),
        ];
        for (name, sql, params) in &statements {
            let (rows, steps) = run_counted(&conn, sql, params);
            assert_eq!(rows, 1, "{name} found the window's calls");
            assert!(
                steps < 2_000,
                "{name} took {steps} steps to count 10 calls among 20,000 older ones"
            );
        }
        let (_, steps) = run_counted(
            &conn,
            &counts,
            &[
                ("$1", keys),
                ("$2", &month_ago),
                ("$3", since),
                ("$4", action),
            ],
        );
        assert!(
            steps > 20_000,
            "the month's count reads the month ({steps} steps)"
        );
    }

    #[test]
    fn grant_pattern_escapes_like_wildcards() {
        assert_eq!(grant_pattern("a_b%c"), "%\"grant\":\"a\\_b\\%c\"%");
    }
}
