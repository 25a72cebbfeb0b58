//! SQL for `crate::site::portable`: reading every table in one snapshot, and writing
//! them back inside the importing transaction.
//!
//! Row ids are not carried across (they are internal); redirects point at their
//! entry by slug, so a dump means the same on either backend.

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;

use super::audit::AuditRow;
use super::connections::DefinitionRow;
use super::keys::KeyRow;
use super::tool_pins::PinRow;
use super::{DatabaseKind, Store, Tx};
use crate::error::{Error, Result, codes};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct UserRecord {
    pub email: String,
    pub roles: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Absent in exports made before users could be disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<i64>,
    /// The name anonymous readers see (absent: none, or an older export).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// An edit of a published entry waiting to be published, by the entry's slug.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct PendingRecord {
    pub slug: String,
    pub title: String,
    pub body: String,
    pub author: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct ContentRecord {
    pub slug: String,
    pub title: String,
    pub body: String,
    pub status: String,
    pub author: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub published_at: Option<i64>,
}

/// An old slug and the slug of the entry it now leads to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct RedirectRecord {
    pub old_slug: String,
    pub slug: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct MediaRecord {
    pub filename: String,
    pub mime_type: String,
    pub size: i64,
    pub sha256: String,
    pub uploaded_by: String,
    pub created_at: i64,
    /// Filled by the dump writer; not a column.
    #[sqlx(default)]
    pub bytes_base64: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(deny_unknown_fields)]
pub struct ConfigRecord {
    pub key: String,
    pub value: String,
    pub updated_at: i64,
    /// Marked secret by an admin (absent: not, or an older export, which the
    /// import makes up for from the audit log).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[sqlx(skip)]
    pub secret: bool,
}

/// A media item with its bytes.
#[derive(sqlx::FromRow)]
struct MediaWithBytes {
    #[sqlx(flatten)]
    record: MediaRecord,
    bytes: Vec<u8>,
}

/// Everything a dump holds, as stored.
#[derive(Debug, Default)]
pub struct Tables {
    pub users: Vec<UserRecord>,
    pub keys: Vec<KeyRow>,
    pub content: Vec<ContentRecord>,
    pub redirects: Vec<RedirectRecord>,
    pub media: Vec<(MediaRecord, Vec<u8>)>,
    pub config: Vec<ConfigRecord>,
    pub connections: Vec<DefinitionRow>,
    pub pending: Vec<PendingRecord>,
    /// The connections' approved tool lists: without them the moved site
    /// would pin whatever each server offers at its first connect.
    pub pins: Vec<PinRow>,
    pub audit: Vec<AuditRow>,
    pub head: (i64, String),
    /// What earlier imports took the history on, oldest first.
    pub imports: Vec<ImportRow>,
}

/// A read-only transaction that sees one consistent state of every table.
pub async fn snapshot(store: &Store) -> Result<Tx> {
    let mut tx = store
        .begin_read()
        .await
        .map_err(|e| store.error("starting an export", e))?;
    // SQLite: a read transaction in WAL mode already reads one snapshot.
    if store.backend() == DatabaseKind::Postgres {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(|e| store.error("starting an export", e))?;
    }
    Ok(tx)
}

async fn all<T>(tx: &mut Tx, sql: &'static str, what: &str) -> Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
{
    sqlx::query_as(sql)
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| Error::storage(what, e))
}

/// Reads every table in `tx` (from [`snapshot`]), in a stable order.
pub async fn read_all(tx: &mut Tx) -> Result<Tables> {
    let users = all(
        tx,
        "SELECT email, roles, created_at, updated_at, disabled_at, display_name FROM users ORDER BY email_norm",
        "exporting users",
    )
    .await?;
    let keys = all(
        tx,
        "SELECT id, label, roles, hash, created_at, expires_at, last_used_at, revoked_at, replaced_by,
         restrictions FROM api_keys ORDER BY created_at, id",
        "exporting keys",
    )
    .await?;
    let content = all(
        tx,
        "SELECT slug, title, body, status, author, created_at, updated_at, published_at
         FROM content ORDER BY created_at, slug",
        "exporting content",
    )
    .await?;
    let redirects = all(
        tx,
        "SELECT r.old_slug, c.slug, r.created_at FROM content_redirects r
         JOIN content c ON c.id = r.content_id ORDER BY r.old_slug",
        "exporting redirects",
    )
    .await?;
    let media: Vec<MediaWithBytes> = all(
        tx,
        "SELECT filename, mime_type, size, sha256, uploaded_by, created_at, bytes
         FROM media ORDER BY filename",
        "exporting media",
    )
    .await?;
    let config = all(
        tx,
        "SELECT key, value, updated_at FROM site_config ORDER BY key",
        "exporting site config",
    )
    .await?;
    let connections = all(
        tx,
        "SELECT name, spec, limits, created_at, updated_at FROM mcp_connections ORDER BY name",
        "exporting MCP connections",
    )
    .await?;
    let secret: Vec<String> = sqlx::query_scalar("SELECT key FROM site_config WHERE secret <> 0")
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| Error::storage("exporting site config", e))?;
    let mut config: Vec<ConfigRecord> = config;
    for c in &mut config {
        c.secret = secret.contains(&c.key);
    }
    let pending = all(
        tx,
        "SELECT c.slug, p.title, p.body, p.author, p.created_at, p.updated_at
         FROM content_pending p JOIN content c ON c.id = p.content_id ORDER BY c.slug",
        "exporting pending revisions",
    )
    .await?;
    let pins = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM mcp_tool_pins ORDER BY name",
        super::tool_pins::COLUMNS
    )))
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| Error::storage("exporting tool pins", e))?;
    let audit = all(
        tx,
        "SELECT seq, ts, actor, action, subject, detail, prev_hash, hash FROM audit_log ORDER BY seq",
        "exporting the audit log",
    )
    .await?;
    let head_sql = super::audit::head_sql(tx.backend);
    let head: Vec<(i64, String)> = all(tx, head_sql, "exporting the audit head").await?;
    let head = head
        .into_iter()
        .next()
        .ok_or_else(|| Error::storage("exporting the audit head", "no audit head row"))?;
    let imports = sqlx::query_as(IMPORTS)
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| Error::storage("exporting the site's imports", e))?;
    Ok(Tables {
        users,
        keys,
        content,
        redirects,
        media: media.into_iter().map(|m| (m.record, m.bytes)).collect(),
        config,
        connections,
        pending,
        pins,
        audit,
        head,
        imports,
    })
}

/// Whether the site holds anything at all (rows in any table, or audit history).
pub async fn is_empty(tx: &mut Tx) -> Result<bool> {
    let total: i64 = sqlx::query_scalar(
        "SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM api_keys)
              + (SELECT COUNT(*) FROM content) + (SELECT COUNT(*) FROM content_redirects)
              + (SELECT COUNT(*) FROM media) + (SELECT COUNT(*) FROM site_config)
              + (SELECT COUNT(*) FROM mcp_connections) + (SELECT COUNT(*) FROM mcp_connection_runs)
              + (SELECT COUNT(*) FROM mcp_calls)
              + (SELECT COUNT(*) FROM audit_log) + (SELECT seq FROM audit_head WHERE id = 1)",
    )
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| Error::storage("checking that the site is empty", e))?;
    Ok(total == 0)
}

/// Writes a dump's rows inside `tx` (from `Store::begin_write`, on an empty site).
pub async fn write_all(tx: &mut Tx, t: &Tables) -> Result<()> {
    super::access::bump(tx).await?;
    for u in &t.users {
        sqlx::query(
            "INSERT INTO users (email, email_norm, roles, created_at, updated_at, disabled_at, display_name)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&u.email)
        .bind(u.email.to_lowercase())
        .bind(&u.roles)
        .bind(u.created_at)
        .bind(u.updated_at)
        .bind(u.disabled_at)
        .bind(&u.display_name)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing users", e))?;
    }
    for k in &t.keys {
        super::keys::insert(tx, k).await?;
    }
    for c in &t.content {
        sqlx::query(
            "INSERT INTO content (slug, title, body, status, author, created_at, updated_at, published_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&c.slug)
        .bind(&c.title)
        .bind(&c.body)
        .bind(&c.status)
        .bind(&c.author)
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(c.published_at)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing content", e))?;
    }
    for r in &t.redirects {
        let done = sqlx::query(
            "INSERT INTO content_redirects (old_slug, content_id, created_at)
             SELECT $1, id, $2 FROM content WHERE slug = $3",
        )
        .bind(&r.old_slug)
        .bind(r.created_at)
        .bind(&r.slug)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing redirects", e))?;
        if done.rows_affected() != 1 {
            return Err(Error::invalid(
                codes::IMPORT_INVALID,
                format!(
                    "the redirect from {:?} points at {:?}, which the export does not hold",
                    r.old_slug, r.slug
                ),
                "import a file written by `gatehouse site export`, unchanged",
            ));
        }
    }
    for (m, bytes) in &t.media {
        sqlx::query(
            "INSERT INTO media (filename, mime_type, size, sha256, bytes, uploaded_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&m.filename)
        .bind(&m.mime_type)
        .bind(m.size)
        .bind(&m.sha256)
        .bind(bytes.clone())
        .bind(&m.uploaded_by)
        .bind(m.created_at)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing media", e))?;
    }
    for c in &t.config {
        sqlx::query(
            "INSERT INTO site_config (key, value, updated_at, secret) VALUES ($1, $2, $3, $4)",
        )
        .bind(&c.key)
        .bind(&c.value)
        .bind(c.updated_at)
        .bind(i64::from(c.secret))
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing site config", e))?;
    }
    for c in &t.connections {
        sqlx::query(
            "INSERT INTO mcp_connections (name, spec, limits, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&c.name)
        .bind(&c.spec)
        .bind(&c.limits)
        .bind(c.created_at)
        .bind(c.updated_at)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing MCP connections", e))?;
    }
    for p in &t.pending {
        let done = sqlx::query(
            "INSERT INTO content_pending (content_id, title, body, author, created_at, updated_at)
             SELECT id, $2, $3, $4, $5, $6 FROM content WHERE slug = $1",
        )
        .bind(&p.slug)
        .bind(&p.title)
        .bind(&p.body)
        .bind(&p.author)
        .bind(p.created_at)
        .bind(p.updated_at)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing pending revisions", e))?;
        if done.rows_affected() != 1 {
            return Err(Error::new(
                codes::IMPORT_INVALID,
                format!(
                    "a pending revision names entry {:?}, which the export does not hold",
                    p.slug
                ),
            ));
        }
    }
    for p in &t.pins {
        super::tool_pins::insert_in(tx, p).await?;
    }
    for a in &t.audit {
        sqlx::query(
            "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(a.seq)
        .bind(a.ts)
        .bind(&a.actor)
        .bind(&a.action)
        .bind(&a.subject)
        .bind(&a.detail)
        .bind(&a.prev_hash)
        .bind(&a.hash)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing the audit log", e))?;
    }
    sqlx::query(super::audit::RECORD_ALL_HOURS)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing the audit log", e))?;
    sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(t.head.0)
        .bind(&t.head.1)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing the audit head", e))?;
    for row in &t.imports {
        record_import(tx, row).await?;
    }
    Ok(())
}

/// An `audit_imports` row: what an import took the site's history on.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRow {
    pub upto_seq: i64,
    pub imported_at: i64,
    pub trust: String,
    pub signed_by: Option<String>,
}

/// Records, inside the importing `tx`, what its history was taken on.
pub async fn record_import(tx: &mut Tx, row: &ImportRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_imports (upto_seq, imported_at, trust, signed_by) VALUES ($1, $2, $3, $4)",
    )
    .bind(row.upto_seq)
    .bind(row.imported_at)
    .bind(&row.trust)
    .bind(&row.signed_by)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording the import", e))?;
    Ok(())
}

const IMPORTS: &str =
    "SELECT upto_seq, imported_at, trust, signed_by FROM audit_imports ORDER BY id";

/// The imports the site's history came through, oldest first: the one that
/// made the site last, and before it those its export carried.
pub async fn imports(store: &Store) -> Result<Vec<ImportRow>> {
    store
        .read("reading the site's imports", |pool| async move {
            sqlx::query_as(IMPORTS).fetch_all(&pool).await
        })
        .await
}
