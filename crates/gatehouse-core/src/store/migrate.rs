//! The schema: migrations embedded per backend, run on open, and what a
//! failed migration is reported as.

use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;

use super::DatabaseKind;
use super::failure::sqlite_readonly;
use super::open::prepare;
use crate::error::{Error, codes};
use crate::redact::redact_urls;

pub(super) static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
pub(super) static POSTGRES_MIGRATOR: sqlx::migrate::Migrator =
    sqlx::migrate!("./migrations/postgres");

/// Prepares the first connection and brings its schema up to date.
pub(super) async fn run(
    conn: &mut AnyConnection,
    backend: DatabaseKind,
) -> std::result::Result<(), sqlx::Error> {
    prepare(conn, backend).await?;
    let migrator = match backend {
        DatabaseKind::Sqlite => &SQLITE_MIGRATOR,
        DatabaseKind::Postgres => &POSTGRES_MIGRATOR,
    };
    // `run_direct`, not `run`: `run` is generic over `Acquire<'a>`, which makes
    // this future unprovably `Send` for async hosts (see site.rs tests).
    migrator
        .run_direct(None, conn, false)
        .await
        .map_err(sqlx::Error::from)
}

/// Whether the database on `conn` holds every migration of this build, and
/// no other: read only, before anything is set on the connection (a
/// `journal_mode` would change a file that is not ours).
pub(super) async fn is_current(conn: &mut AnyConnection, backend: DatabaseKind) -> bool {
    let migrator = match backend {
        DatabaseKind::Sqlite => &SQLITE_MIGRATOR,
        DatabaseKind::Postgres => &POSTGRES_MIGRATOR,
    };
    let ours = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let theirs: std::result::Result<(i64, i64), _> = sqlx::query_as(
        "SELECT COALESCE(MAX(version), 0), COUNT(*) FROM _sqlx_migrations WHERE success",
    )
    .fetch_one(conn)
    .await;
    matches!(theirs, Ok((version, count)) if version == ours && count == migrator.iter().count() as i64)
}

/// The error for a failed [`run`]: a read-only SQLite file, a storage cause
/// the driver names, else a database that is newer or damaged.
pub(super) fn failed(e: &sqlx::Error, options: &AnyConnectOptions, shown: &str) -> Error {
    let text = redact_urls(&e.to_string());
    tracing::error!(url = %shown, error = %text, "migration failed");
    let detail = serde_json::json!({"step": "migrate", "url": shown});
    if let Some(err) = sqlite_readonly(options, shown) {
        return err.detail(serde_json::json!({"step": "open", "url": shown}));
    }
    // A full disk or a read-only server stops the first statement too;
    // those are not a damaged or newer database.
    if let Some(cause) = crate::error::DriverError::cause(e) {
        return cause
            .error(&format!("opening the database at {shown}"))
            .detail(detail);
    }
    Error::new(
        codes::STORAGE_ERROR,
        format!("migrating the database at {shown} failed; see the log"),
    )
    .hint("the database may belong to a newer Gatehouse, or be damaged")
    .detail(detail)
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, Row};

    use super::*;
    use crate::access::audit;
    use crate::store::{Store, sqlite_url};

    async fn first_three(conn: &mut AnyConnection) -> Vec<sqlx::any::AnyRow> {
        sqlx::query("SELECT seq, ts, actor, action, subject, detail, prev_hash, hash FROM audit_log WHERE seq <= 3 ORDER BY seq")
            .fetch_all(conn)
            .await
            .unwrap()
    }

    /// Every column of `rows` as text.
    fn text(rows: Vec<sqlx::any::AnyRow>) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| {
                (0..8)
                    .map(|i| {
                        r.try_get::<String, _>(i)
                            .or_else(|_| r.try_get::<i64, _>(i).map(|n| n.to_string()))
                            .unwrap()
                    })
                    .collect()
            })
            .collect()
    }

    /// Migration 0017 rebuilds the SQLite audit log keyed by its rowid: every
    /// entry of an older database survives byte for byte (the chain still
    /// verifies), appends continue the chain, and `seq` has no index of its own.
    #[tokio::test]
    async fn audit_seq_becomes_the_rowid_and_every_entry_survives() {
        sqlx::any::install_default_drivers();
        let tmp = tempfile::tempdir().unwrap();
        let url = sqlite_url(&tmp.path().join("old.db"));
        // A database as migration 0016 left it, holding a valid chain.
        let mut conn = AnyConnection::connect(&url).await.unwrap();
        SQLITE_MIGRATOR
            .run_direct(Some(16), &mut conn, false)
            .await
            .unwrap();
        let mut prev = audit::GENESIS.to_string();
        for seq in 1..=3_i64 {
            let detail = format!("{{\"n\":{seq}}}");
            let hash = crate::store::audit::entry_hash(
                seq,
                1000 + seq,
                "cli",
                "test",
                "s",
                &detail,
                &prev,
            );
            sqlx::query(
                "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash) \
                 VALUES ($1, $2, 'cli', 'test', 's', $3, $4, $5)",
            )
            .bind(seq)
            .bind(1000 + seq)
            .bind(detail)
            .bind(&prev)
            .bind(&hash)
            .execute(&mut conn)
            .await
            .unwrap();
            prev = hash;
        }
        sqlx::query("UPDATE audit_head SET seq = 3, hash = $1 WHERE id = 1")
            .bind(&prev)
            .execute(&mut conn)
            .await
            .unwrap();
        let before = text(first_three(&mut conn).await);
        conn.close().await.unwrap();

        let store = Store::open(&url).await.unwrap();
        let report = audit::verify(&store).await.unwrap();
        assert!(report.ok && report.entries == 3, "{report:?}");
        let mut tx = store.begin_write().await.unwrap();
        let seq = audit::append(
            &mut tx,
            audit::AuditEntry {
                actor: "cli",
                action: audit::AuditAction::SiteConfigSet,
                subject: "after",
                detail: serde_json::json!({}),
            },
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(seq, 4);
        let report = audit::verify(&store).await.unwrap();
        assert!(report.ok && report.entries == 4, "{report:?}");
        store.close().await;

        let mut conn = AnyConnection::connect(&url).await.unwrap();
        assert_eq!(text(first_three(&mut conn).await), before);
        let indexes: Vec<String> = sqlx::query("SELECT name FROM pragma_index_list('audit_log')")
            .fetch_all(&mut conn)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            !indexes.iter().any(|i| i.starts_with("sqlite_autoindex")),
            "seq still has an index beside the rowid: {indexes:?}"
        );
        let pk_type: String =
            sqlx::query("SELECT type FROM pragma_table_info('audit_log') WHERE pk = 1")
                .fetch_one(&mut conn)
                .await
                .unwrap()
                .get(0);
        assert_eq!(pk_type, "INTEGER");
        conn.close().await.unwrap();
    }
}
