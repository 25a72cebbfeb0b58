//! SQL for content entries, their slug redirects and the full-text index.
//!
//! The index is maintained by the database inside the writing transaction
//! (SQLite: FTS5 triggers; PostgreSQL: a generated tsvector column), so a search
//! finds an entry the moment its write commits.

use sqlx::AssertSqlSafe;

use super::content_pending::Pending;
use super::{DatabaseKind, Store, Tx, is_unique_violation};
use crate::error::{Error, Result, codes};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct Entry {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub body: String,
    pub status: String,
    pub author: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub published_at: Option<i64>,
}

const COLUMNS: &str =
    "c.id, c.slug, c.title, c.body, c.status, c.author, c.created_at, c.updated_at, c.published_at";

fn slug_taken(slug: &str) -> Error {
    Error::new(
        codes::SLUG_TAKEN,
        format!("the slug {slug:?} is already used by another entry or redirect"),
    )
    .hint("choose another slug")
}

/// The entry with `slug`, or the one a redirect from `slug` points at, with
/// its pending revision if it has one: one statement, so a `content_read`
/// call reads once (on PostgreSQL one round trip, on SQLite one read
/// transaction).
pub async fn by_slug(store: &Store, slug: &str) -> Result<Option<(Entry, Option<Pending>)>> {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| by_slug_sql(false));
    if let Some(direct) = store.direct() {
        return Ok(direct
            .content_by_slug(&SQL, slug, false)?
            .map(|(entry, pending, _)| (entry, pending)));
    }
    let sql = SQL.as_str();
    let row: Option<WithPending> = store
        .read("reading content", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql))
                .bind(slug)
                .fetch_optional(&pool)
                .await
        })
        .await?;
    Ok(row.map(WithPending::split))
}

/// [`by_slug`] for an anonymous reader, who is shown the author's display
/// name: on SQLite the statement also returns the `display_name` of the user
/// whose `email_norm` is the ASCII `lower()` of the author label's email part
/// (`user:<email>`, or a bare label with an `@`), in the same read
/// transaction. The third value is `Some(name)` when that join ran (`name`
/// NULL: no such user, no name, or no email part), `None` when it did not
/// (PostgreSQL): the caller then looks the name up itself. Whether the join
/// may stand for that lookup is the caller's rule
/// (`access::users::public_name_joined`).
#[allow(clippy::type_complexity)]
pub async fn by_slug_named(
    store: &Store,
    slug: &str,
) -> Result<Option<(Entry, Option<Pending>, Option<Option<String>>)>> {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| by_slug_sql(true));
    match store.direct() {
        Some(direct) => direct.content_by_slug(&SQL, slug, true),
        None => Ok(by_slug(store, slug)
            .await?
            .map(|(entry, pending)| (entry, pending, None))),
    }
}

/// [`by_slug`]'s statement; with `named`, one more column: the author's
/// display name (see [`by_slug_named`]).
fn by_slug_sql(named: bool) -> String {
    let name = if named {
        ", (SELECT u.display_name FROM users u WHERE u.email_norm = lower(CASE \
             WHEN substr(c.author, 1, 5) = 'user:' THEN substr(c.author, 6) \
             WHEN c.author LIKE '%@%' THEN c.author END)) AS author_name"
    } else {
        ""
    };
    format!(
        "SELECT {COLUMNS}, {PENDING_COLUMNS}{name} FROM (
           SELECT {COLUMNS} FROM content c WHERE c.slug = $1
           UNION ALL
           SELECT {COLUMNS} FROM content c JOIN content_redirects r ON r.content_id = c.id WHERE r.old_slug = $1
         ) c LEFT JOIN content_pending p ON p.content_id = c.id"
    )
}

/// The pending revision's columns beside an entry's, NULL when it has none.
const PENDING_COLUMNS: &str = "p.title AS p_title, p.body AS p_body, p.author AS p_author, \
     p.created_at AS p_created_at, p.updated_at AS p_updated_at";

/// A row of [`by_slug`].
#[derive(sqlx::FromRow)]
struct WithPending {
    #[sqlx(flatten)]
    entry: Entry,
    p_title: Option<String>,
    p_body: Option<String>,
    p_author: Option<String>,
    p_created_at: Option<i64>,
    p_updated_at: Option<i64>,
}

impl WithPending {
    fn split(self) -> (Entry, Option<Pending>) {
        let pending = match (
            self.p_title,
            self.p_body,
            self.p_author,
            self.p_created_at,
            self.p_updated_at,
        ) {
            (Some(title), Some(body), Some(author), Some(created_at), Some(updated_at)) => {
                Some(Pending {
                    title,
                    body,
                    author,
                    created_at,
                    updated_at,
                })
            }
            _ => None,
        };
        (self.entry, pending)
    }
}

pub async fn by_slug_in(tx: &mut Tx, slug: &str) -> Result<Option<Entry>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM content c WHERE c.slug = $1"
    )))
    .bind(slug)
    .fetch_optional(&mut **tx)
    .await
    .map_err(|e| Error::storage("reading content", e))
}

/// Which entries a list or search may return. Applied in the SQL, so the
/// limit, the offset and the ranking see only these entries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Visible<'a> {
    /// Only entries with this status (`draft` or `published`); `None`: both.
    pub status: Option<Status>,
    /// Only slugs `LIKE` one of these (`%` the only wildcard); empty: any slug.
    pub slug_like: &'a [String],
}

/// An entry's status, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Draft,
    Published,
}

impl Visible<'_> {
    /// The `AND ...` clauses, with slug placeholders numbered from `first`.
    fn clauses(&self, first: usize) -> String {
        let mut sql = String::new();
        match self.status {
            Some(Status::Published) => sql.push_str(" AND c.status = 'published'"),
            Some(Status::Draft) => sql.push_str(" AND c.status = 'draft'"),
            None => {}
        }
        if !self.slug_like.is_empty() {
            let any = (0..self.slug_like.len())
                .map(|i| format!("c.slug LIKE ${}", first + i))
                .collect::<Vec<_>>()
                .join(" OR ");
            sql.push_str(&format!(" AND ({any})"));
        }
        sql
    }
}

/// Entries, newest first, of those `visible`.
pub async fn list(
    store: &Store,
    visible: Visible<'_>,
    limit: i64,
    offset: i64,
) -> Result<Vec<Entry>> {
    let filter = visible.clauses(3);
    let sql = &format!(
        "SELECT {COLUMNS} FROM content c WHERE 1 = 1{filter} ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2"
    );
    store
        .read("listing content", |pool| async move {
            let mut q = sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(limit)
                .bind(offset);
            for like in visible.slug_like {
                q = q.bind(like);
            }
            q.fetch_all(&pool).await
        })
        .await
}

/// Quotes every word so user text is never parsed as FTS5 query syntax.
fn fts5_query(text: &str) -> String {
    text.split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Full-text search over title and body (all words must match), best first,
/// among the entries `visible`.
pub async fn search(
    store: &Store,
    text: &str,
    visible: Visible<'_>,
    limit: i64,
) -> Result<Vec<Entry>> {
    let filter = visible.clauses(3);
    let (sql, arg) = match store.backend() {
        DatabaseKind::Sqlite => {
            let q = fts5_query(text);
            if q.is_empty() {
                return Ok(Vec::new());
            }
            (
                format!(
                    "SELECT {COLUMNS} FROM content_fts f JOIN content c ON c.id = f.rowid
                     WHERE content_fts MATCH $1{filter} ORDER BY f.rank, c.id LIMIT $2"
                ),
                q,
            )
        }
        DatabaseKind::Postgres => (
            format!(
                "SELECT {COLUMNS} FROM content c WHERE c.search @@ plainto_tsquery('simple', $1){filter}
                 ORDER BY ts_rank(c.search, plainto_tsquery('simple', $1)) DESC, c.id LIMIT $2"
            ),
            text.to_string(),
        ),
    };
    let (sql, arg) = (&sql, &arg);
    store
        .read("searching content", |pool| async move {
            let mut q = sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(arg)
                .bind(limit);
            for like in visible.slug_like {
                q = q.bind(like);
            }
            q.fetch_all(&pool).await
        })
        .await
}

async fn slug_is_redirect(tx: &mut Tx, slug: &str) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT content_id FROM content_redirects WHERE old_slug = $1")
        .bind(slug)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading redirects", e))
}

pub struct NewEntry<'a> {
    pub slug: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    pub author: &'a str,
    pub status: &'a str,
}

pub async fn insert(tx: &mut Tx, e: &NewEntry<'_>, now: i64) -> Result<i64> {
    if slug_is_redirect(tx, e.slug).await?.is_some() {
        return Err(slug_taken(e.slug));
    }
    let published_at = (e.status == "published").then_some(now);
    sqlx::query_scalar(
        "INSERT INTO content (slug, title, body, status, author, created_at, updated_at, published_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7) RETURNING id",
    )
    .bind(e.slug)
    .bind(e.title)
    .bind(e.body)
    .bind(e.status)
    .bind(e.author)
    .bind(now)
    .bind(published_at)
    .fetch_one(&mut **tx)
    .await
    .map_err(|err| if is_unique_violation(&err) { slug_taken(e.slug) } else { Error::storage("creating content", err) })
}

/// Replaces title and body and sets the entry back to draft.
pub async fn update_draft(tx: &mut Tx, id: i64, title: &str, body: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE content SET title = $1, body = $2, status = 'draft', updated_at = $3 WHERE id = $4",
    )
    .bind(title)
    .bind(body)
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("updating content", e))?;
    Ok(())
}

/// Renames an entry's slug, leaving a redirect from the old one.
pub async fn rename(tx: &mut Tx, id: i64, old_slug: &str, new_slug: &str, now: i64) -> Result<()> {
    match slug_is_redirect(tx, new_slug).await? {
        // Renaming back to a slug this entry used before: the redirect goes away.
        Some(owner) if owner == id => {
            sqlx::query("DELETE FROM content_redirects WHERE old_slug = $1")
                .bind(new_slug)
                .execute(&mut **tx)
                .await
                .map_err(|e| Error::storage("updating redirects", e))?;
        }
        Some(_) => return Err(slug_taken(new_slug)),
        None => {}
    }
    sqlx::query("UPDATE content SET slug = $1, updated_at = $2 WHERE id = $3")
        .bind(new_slug)
        .bind(now)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                slug_taken(new_slug)
            } else {
                Error::storage("renaming content", e)
            }
        })?;
    sqlx::query(
        "INSERT INTO content_redirects (old_slug, content_id, created_at) VALUES ($1, $2, $3)",
    )
    .bind(old_slug)
    .bind(id)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording a redirect", e))?;
    Ok(())
}

pub async fn publish(tx: &mut Tx, id: i64, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE content SET status = 'published', published_at = $1, updated_at = $1 WHERE id = $2",
    )
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("publishing content", e))?;
    Ok(())
}

pub async fn delete(tx: &mut Tx, id: i64) -> Result<()> {
    sqlx::query("DELETE FROM content_redirects WHERE content_id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("deleting redirects", e))?;
    sqlx::query("DELETE FROM content WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("deleting content", e))?;
    Ok(())
}

pub async fn redirects_to(store: &Store, id: i64) -> Result<Vec<String>> {
    store
        .read("reading redirects", |pool| async move {
            sqlx::query_scalar(
                "SELECT old_slug FROM content_redirects WHERE content_id = $1 ORDER BY old_slug",
            )
            .bind(id)
            .fetch_all(&pool)
            .await
        })
        .await
}
