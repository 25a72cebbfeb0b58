//! SQL for `crate::site::portable`: reading every table in one snapshot, and writing
//! them back inside the importing transaction.
//!
//! Row ids are not carried across (they are internal); redirects point at their
//! entry by slug, so a dump means the same on either backend.

use sqlx::Row;

use super::audit::AuditRow;
use super::keys::KeyRow;
use super::{Backend, Store, Tx};
use crate::error::{Error, Result, codes};
use crate::site::portable::{
    ConfigRecord, ConnectionRecord, ContentRecord, MediaRecord, RedirectRecord, UserRecord,
};

/// Everything a dump holds, as stored.
#[derive(Debug, Default)]
pub struct Tables {
    pub users: Vec<UserRecord>,
    pub keys: Vec<KeyRow>,
    pub content: Vec<ContentRecord>,
    pub redirects: Vec<RedirectRecord>,
    pub media: Vec<(MediaRecord, Vec<u8>)>,
    pub config: Vec<ConfigRecord>,
    pub connections: Vec<ConnectionRecord>,
    pub audit: Vec<AuditRow>,
    pub head: (i64, String),
}

/// A read-only transaction that sees one consistent state of every table.
pub async fn snapshot(store: &Store) -> Result<Tx> {
    let mut tx = store
        .pool()
        .begin()
        .await
        .map_err(|e| store.error("starting an export", e))?;
    // SQLite: a read transaction in WAL mode already reads one snapshot.
    if store.backend() == Backend::Postgres {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(|e| store.error("starting an export", e))?;
    }
    Ok(tx)
}

async fn all(tx: &mut Tx, sql: &str, what: &str) -> Result<Vec<sqlx::any::AnyRow>> {
    sqlx::query(sql)
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| Error::storage(what, e))
}

/// Reads every table in `tx` (from [`snapshot`]), in a stable order.
pub async fn read_all(tx: &mut Tx) -> Result<Tables> {
    let mut t = Tables::default();
    for r in all(
        tx,
        "SELECT email, roles, created_at, updated_at FROM users ORDER BY email_norm",
        "exporting users",
    )
    .await?
    {
        t.users.push(UserRecord {
            email: r.try_get("email")?,
            roles: r.try_get("roles")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        });
    }
    for r in all(
        tx,
        "SELECT id, label, roles, hash, created_at, expires_at, last_used_at, revoked_at, replaced_by
         FROM api_keys ORDER BY created_at, id",
        "exporting keys",
    )
    .await?
    {
        t.keys.push(KeyRow {
            id: r.try_get("id")?,
            label: r.try_get("label")?,
            roles: r.try_get("roles")?,
            hash: r.try_get("hash")?,
            created_at: r.try_get("created_at")?,
            expires_at: r.try_get("expires_at")?,
            last_used_at: r.try_get("last_used_at")?,
            revoked_at: r.try_get("revoked_at")?,
            replaced_by: r.try_get("replaced_by")?,
        });
    }
    for r in all(
        tx,
        "SELECT slug, title, body, status, author, created_at, updated_at, published_at
         FROM content ORDER BY created_at, slug",
        "exporting content",
    )
    .await?
    {
        t.content.push(ContentRecord {
            slug: r.try_get("slug")?,
            title: r.try_get("title")?,
            body: r.try_get("body")?,
            status: r.try_get("status")?,
            author: r.try_get("author")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
            published_at: r.try_get("published_at")?,
        });
    }
    for r in all(
        tx,
        "SELECT r.old_slug, c.slug, r.created_at FROM content_redirects r
         JOIN content c ON c.id = r.content_id ORDER BY r.old_slug",
        "exporting redirects",
    )
    .await?
    {
        t.redirects.push(RedirectRecord {
            old_slug: r.try_get("old_slug")?,
            slug: r.try_get("slug")?,
            created_at: r.try_get("created_at")?,
        });
    }
    for r in all(
        tx,
        "SELECT filename, mime_type, size, sha256, uploaded_by, created_at, bytes
         FROM media ORDER BY filename",
        "exporting media",
    )
    .await?
    {
        t.media.push((
            MediaRecord {
                filename: r.try_get("filename")?,
                mime_type: r.try_get("mime_type")?,
                size: r.try_get("size")?,
                sha256: r.try_get("sha256")?,
                uploaded_by: r.try_get("uploaded_by")?,
                created_at: r.try_get("created_at")?,
                bytes_base64: String::new(),
            },
            r.try_get("bytes")?,
        ));
    }
    for r in all(
        tx,
        "SELECT key, value, updated_at FROM site_config ORDER BY key",
        "exporting site config",
    )
    .await?
    {
        t.config.push(ConfigRecord {
            key: r.try_get("key")?,
            value: r.try_get("value")?,
            updated_at: r.try_get("updated_at")?,
        });
    }
    for r in all(
        tx,
        "SELECT name, spec, limits, created_at, updated_at FROM mcp_connections ORDER BY name",
        "exporting MCP connections",
    )
    .await?
    {
        t.connections.push(ConnectionRecord {
            name: r.try_get("name")?,
            spec: r.try_get("spec")?,
            limits: r.try_get("limits")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        });
    }
    for r in all(
        tx,
        "SELECT seq, ts, actor, action, subject, detail, prev_hash, hash FROM audit_log ORDER BY seq",
        "exporting the audit log",
    )
    .await?
    {
        t.audit.push(AuditRow {
            seq: r.try_get("seq")?,
            ts: r.try_get("ts")?,
            actor: r.try_get("actor")?,
            action: r.try_get("action")?,
            subject: r.try_get("subject")?,
            detail: r.try_get("detail")?,
            prev_hash: r.try_get("prev_hash")?,
            hash: r.try_get("hash")?,
        });
    }
    let head = all(
        tx,
        "SELECT seq, hash FROM audit_head WHERE id = 1",
        "exporting the audit head",
    )
    .await?;
    let head = head
        .first()
        .ok_or_else(|| Error::storage("exporting the audit head", "no audit head row"))?;
    t.head = (head.try_get("seq")?, head.try_get("hash")?);
    Ok(t)
}

/// Whether the site holds anything at all (rows in any table, or audit history).
pub async fn is_empty(tx: &mut Tx) -> Result<bool> {
    let row = sqlx::query(
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
    Ok(row.try_get::<i64, _>(0)? == 0)
}

/// Writes a dump's rows inside `tx` (from `Store::begin_write`, on an empty site).
pub async fn write_all(tx: &mut Tx, t: &Tables) -> Result<()> {
    for u in &t.users {
        sqlx::query(
            "INSERT INTO users (email, email_norm, roles, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&u.email)
        .bind(u.email.to_lowercase())
        .bind(&u.roles)
        .bind(u.created_at)
        .bind(u.updated_at)
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
        sqlx::query("INSERT INTO site_config (key, value, updated_at) VALUES ($1, $2, $3)")
            .bind(&c.key)
            .bind(&c.value)
            .bind(c.updated_at)
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
    sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(t.head.0)
        .bind(&t.head.1)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("importing the audit head", e))?;
    Ok(())
}
