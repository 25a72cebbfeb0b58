//! `cargo bench -p gatehouse-cli --bench sqlx_any`: what sqlx's `Any` driver
//! (the store's one code path for both backends) costs against the concrete
//! SQLite and PostgreSQL drivers, on the query of a `content_read` call.
//! Same database, same statement, sequential and 16 at once; it prints µs per
//! query and asserts nothing about speed. PostgreSQL when
//! `GATEHOUSE_TEST_PG_URL` is set.

use std::time::Instant;

use gatehouse_core::store::Store;
use sqlx::{Executor, Pool};

const SQL: &str = "SELECT c.id, c.slug, c.title, c.body, c.status, c.author, c.created_at, c.updated_at, c.published_at FROM content c WHERE c.slug = $1";
const N: usize = 20_000;

type Row = (
    i64,
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<i64>,
);

async fn run<DB: sqlx::Database>(label: &str, pool: Pool<DB>)
where
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments: sqlx::IntoArguments<DB>,
    Row: for<'r> sqlx::FromRow<'r, DB::Row>,
    String: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB>,
{
    for _ in 0..200 {
        let _: Row = sqlx::query_as(SQL)
            .bind("welcome".to_string())
            .fetch_one(&pool)
            .await
            .unwrap();
    }
    let start = Instant::now();
    for _ in 0..N {
        let _: Row = sqlx::query_as(SQL)
            .bind("welcome".to_string())
            .fetch_one(&pool)
            .await
            .unwrap();
    }
    let seq = start.elapsed().as_secs_f64() * 1e6 / N as f64;
    let start = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for _ in 0..N / 16 {
                    let _: Row = sqlx::query_as(SQL)
                        .bind("welcome".to_string())
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let conc = start.elapsed().as_secs_f64() * 1e6 / N as f64;
    println!("{label:<16} sequential {seq:>7.1} µs/query   16 at once {conc:>7.1} µs/query");
}

#[tokio::main]
async fn main() {
    sqlx::any::install_default_drivers();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("site");
    let site = gatehouse_core::site::init(&dir, Some("bench"), true, None)
        .await
        .unwrap();
    let db = dir.join("gatehouse.db");
    let url = gatehouse_core::store::sqlite_url(&db);
    site.store.close().await;
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(&db);
    let sqlite = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(opts)
        .await
        .unwrap();
    run("sqlite concrete", sqlite).await;
    let store = Store::open(&url).await.unwrap();
    run("sqlite Any", store.pool().clone()).await;

    if let Some(base) = std::env::var("GATEHOUSE_TEST_PG_URL")
        .ok()
        .filter(|s| !s.is_empty())
    {
        let name = format!("gh_bench_any_{}", std::process::id());
        let status = std::process::Command::new("psql")
            .arg(format!("{base}/postgres"))
            .args(["-q", "-c", &format!("CREATE DATABASE {name}")])
            .status()
            .unwrap();
        assert!(status.success());
        let url = format!("{base}/{name}");
        let pg_dir = tmp.path().join("pg");
        gatehouse_core::site::init(&pg_dir, Some("bench"), true, Some(&url))
            .await
            .unwrap();
        let pg = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .connect(&url)
            .await
            .unwrap();
        run("postgres concrete", pg).await;
        let store = Store::open(&url).await.unwrap();
        run("postgres Any", store.pool().clone()).await;
    }
}
