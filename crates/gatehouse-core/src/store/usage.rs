//! SQL for key usage: tool calls by actor and tool over a window, counted
//! from the audit log's `mcp.tool_call` entries (every call has one).

use sqlx::{AnyPool, AssertSqlSafe};

use super::Store;
use super::audit::HOUR_MS;
use crate::error::{Code, Result};

/// [`window_start`]'s statement: `$1` the hour the window starts in, `$2`
/// the hour after the current one.
const WINDOW_START_SQL: &str =
    "SELECT MIN(first_seq) FROM audit_hours WHERE hour >= $1 AND hour <= $2";

/// The lowest seq an entry stamped at or after `since` can have (`None`: there
/// is no entry at all). Each `audit_hours` row holds the first seq stored with
/// a `ts` in its hour, so every entry of the window has a seq at least the
/// smallest of those from `since`'s hour on, in whatever order clocks stamped
/// entries. The views read the log from there by seq, its rowid: no index on
/// the log is written for them by every tool call.
///
/// Hours more than one ahead of this machine's clock are left out: one entry
/// stamped a year ahead (a skewed clock) would have made every window start
/// at it, and read most of the log, until then; entries stamped that far
/// ahead may go uncounted. So may those of a writer that records no hours (a
/// server started before migration 0026, still running) in an hour no newer
/// process wrote in: restart servers after upgrading.
async fn window_start(pool: &AnyPool, since: i64) -> std::result::Result<Option<i64>, sqlx::Error> {
    let now = crate::time::now_ms();
    sqlx::query_scalar(WINDOW_START_SQL)
        .bind(since.div_euclid(HOUR_MS))
        .bind(now.div_euclid(HOUR_MS) + 1)
        .fetch_one(pool)
        .await
}

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
/// week's start, `$3` the day's, `$4` the action, `$5` the week's [`window_start`];
/// rows grouped and ordered by `group`.
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
         WHERE a.seq >= $5 AND a.action = $4 AND {filter} AND a.ts >= $2
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
            let Some(from) = window_start(&pool, week_start).await? else {
                return Ok(Vec::new());
            };
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(like)
                .bind(week_start)
                .bind(day_start)
                .bind(action)
                .bind(from)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// [`last_calls`]'s statement: `$1` the actors' pattern, `$2` since when, `$3`
/// the action, `$4` the [`window_start`].
const LAST_CALLS_SQL: &str = "SELECT a.actor, a.detail FROM audit_log a
     JOIN (SELECT actor, MAX(seq) AS seq FROM audit_log
           WHERE seq >= $4 AND action = $3 AND actor LIKE $1 AND ts >= $2
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
            let Some(from) = window_start(&pool, since).await? else {
                return Ok(Vec::new());
            };
            sqlx::query_as(LAST_CALLS_SQL)
                .bind(like)
                .bind(since)
                .bind(action)
                .bind(from)
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
            let Some(from) = window_start(&pool, week_start).await? else {
                return Ok(Vec::new());
            };
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(like)
                .bind(week_start)
                .bind(day_start)
                .bind(action)
                .bind(from)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// [`grant_last_call`]'s statement: `$1` the grant's pattern, `$2` since when,
/// `$3` the action, `$4` the [`window_start`].
const GRANT_LAST_CALL_SQL: &str = "SELECT a.detail FROM audit_log a
     WHERE a.seq >= $4 AND a.action = $3 AND a.detail LIKE $1 ESCAPE '\\' AND a.ts >= $2
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
                let Some(from) = window_start(&pool, since).await? else {
                    return Ok(None);
                };
                sqlx::query_scalar(GRANT_LAST_CALL_SQL)
                    .bind(like)
                    .bind(since)
                    .bind(action)
                    .bind(from)
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
/// bucket's start, `$3` a bucket's length, `$4` the action, `$5` the
/// [`window_start`].
fn by_day_sql() -> String {
    let refused = refused();
    format!(
        "SELECT a.actor AS actor, (a.ts - $2) / $3 AS bucket,
                COUNT(*) AS calls,
                SUM(CASE WHEN {refused} THEN 1 ELSE 0 END) AS refused
         FROM audit_log a
         WHERE a.seq >= $5 AND a.action = $4 AND a.actor LIKE $1 AND a.ts >= $2
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
            let Some(from) = window_start(&pool, start).await? else {
                return Ok(Vec::new());
            };
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(like)
                .bind(start)
                .bind(day_ms)
                .bind(action)
                .bind(from)
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
    /// all 20,000 old entries (over 100,000 steps each); from the window's
    /// first seq (`audit_hours`) they read the window.
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
            // A clock a year ahead stamped the first entry: its hour must not
            // start every window there.
            insert
                .execute([crate::time::now_ms() + 365 * 86_400_000])
                .unwrap();
            for i in 0..20_000 {
                insert.execute([month_ago + i]).unwrap();
            }
            for i in 0..10 {
                insert.execute([hour_ago + 1 + i]).unwrap();
            }
        }
        // As the appends would have recorded them (they are not used here, to
        // stamp a month in seconds).
        tx.execute_batch(super::super::audit::RECORD_ALL_HOURS)
            .unwrap();
        tx.commit().unwrap();
        let now_hour = crate::time::now_ms().div_euclid(HOUR_MS) + 1;
        let start = |since: i64| -> i64 {
            conn.query_row(
                WINDOW_START_SQL,
                [since.div_euclid(HOUR_MS), now_hour],
                |r| r.get(0),
            )
            .unwrap()
        };
        let (from_hour, from_month) = (&start(hour_ago), &start(month_ago));

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
                vec![
                    ("$1", keys),
                    ("$2", since),
                    ("$3", since),
                    ("$4", action),
                    ("$5", from_hour),
                ],
            ),
            (
                "grant_tool_calls",
                &grant_counts,
                vec![
                    ("$1", grant),
                    ("$2", since),
                    ("$3", since),
                    ("$4", action),
                    ("$5", from_hour),
                ],
            ),
            (
                "last_calls",
                LAST_CALLS_SQL,
                vec![
                    ("$1", keys),
                    ("$2", since),
                    ("$3", action),
                    ("$4", from_hour),
                ],
            ),
            (
                "grant_last_call",
                GRANT_LAST_CALL_SQL,
                vec![
                    ("$1", grant),
                    ("$2", since),
                    ("$3", action),
                    ("$4", from_hour),
                ],
            ),
            (
                "calls_by_day",
                &by_day,
                vec![
                    ("$1", keys),
                    ("$2", since),
                    ("$3", day),
                    ("$4", action),
                    ("$5", from_hour),
                ],
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
                ("$5", from_month),
            ],
        );
        assert!(
            steps > 20_000,
            "the month's count reads the month ({steps} steps)"
        );
    }

    /// Entries stamped out of order (a clock stepped back between two
    /// commits, or two machines' clocks apart) are counted in the window
    /// their `ts` is in, however their seqs interleave; a window nothing is
    /// stamped in counts nothing; and migrating records the hours of the
    /// entries already stored.
    #[tokio::test]
    async fn the_window_holds_every_entry_its_clock_stamped_in_it() {
        sqlx::any::install_default_drivers();
        let tmp = tempfile::tempdir().unwrap();
        let url = crate::store::sqlite_url(&tmp.path().join("u.db"));
        let t0 = 1_000_000_000_000_i64 - 1_000_000_000_000 % HOUR_MS;
        let insert = |ts: i64, actor: &'static str| {
            sqlx::query(
                "INSERT INTO audit_log (ts, actor, action, subject, detail, prev_hash, hash)
                 VALUES ($1, $2, 'mcp.tool_call', 'content_read', '{}', '', '')",
            )
            .bind(ts)
            .bind(actor)
        };
        // Before migration 0026: two hours of entries, the later hour first.
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap();
        super::super::migrate::SQLITE_MIGRATOR
            .run_direct(Some(25), &mut conn, false)
            .await
            .unwrap();
        insert(t0 + 3 * HOUR_MS, "key:a")
            .execute(&mut conn)
            .await
            .unwrap();
        insert(t0 + HOUR_MS, "key:a")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("UPDATE audit_head SET seq = 2 WHERE id = 1")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::Connection::close(conn).await.unwrap();
        let store = Store::open(&url).await.unwrap();
        // After it, through the server's appends and the sqlx ones: the clock
        // steps back past both hours, then forward.
        let entry = |actor: &str| crate::store::audit::NewAuditRow {
            actor: actor.into(),
            action: "mcp.tool_call".into(),
            subject: "content_read".into(),
            detail: "{}".into(),
        };
        let direct = store.direct().expect("a SQLite file");
        for ts in [t0 + 4 * HOUR_MS, t0, t0 + 1] {
            let hour = (ts != t0 + 1).then_some(ts.div_euclid(HOUR_MS));
            direct.append(&[entry("key:b")], ts, hour, true).unwrap();
        }
        let mut tx = store.begin_write().await.unwrap();
        crate::store::audit::append(&mut tx, &[entry("key:c")], t0 + 2 * HOUR_MS)
            .await
            .unwrap();
        tx.commit().await.unwrap();

        let count = |since: i64| {
            let store = &store;
            async move {
                let rows = tool_calls(store, "mcp.tool_call", "key:", since, since)
                    .await
                    .unwrap();
                let by_day = calls_by_day(store, "mcp.tool_call", "key:", since, 86_400_000)
                    .await
                    .unwrap();
                let days: i64 = by_day.iter().map(|d| d.calls).sum();
                let week: i64 = rows.iter().map(|r| r.week).sum();
                assert_eq!(week, days, "both views count the window since {since}");
                let last = last_calls(store, "mcp.tool_call", "key:", since)
                    .await
                    .unwrap();
                (week, last.len())
            }
        };
        assert_eq!(count(t0).await, (6, 3));
        assert_eq!(count(t0 + 1).await, (5, 3));
        assert_eq!(count(t0 + HOUR_MS).await, (4, 3));
        assert_eq!(count(t0 + 2 * HOUR_MS + 1).await, (2, 2));
        assert_eq!(count(t0 + 4 * HOUR_MS).await, (1, 1));
        assert_eq!(count(t0 + 5 * HOUR_MS).await, (0, 0));
        store.close().await;
    }

    #[test]
    fn grant_pattern_escapes_like_wildcards() {
        assert_eq!(grant_pattern("a_b%c"), "%\"grant\":\"a\\_b\\%c\"%");
    }
}
