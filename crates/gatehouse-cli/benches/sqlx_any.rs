//! `cargo bench -p gatehouse-cli --bench sqlx_any`: what sqlx's `Any` driver
//! (the store's one code path for both backends) costs against the concrete
//! SQLite and PostgreSQL drivers, on the statements of a tool call: the read
//! of `content_read` (sequential and 16 at once) and a write transaction
//! shaped like the audit group commit of one entry (take the head lock,
//! insert a row, commit; sequential, one writer connection as the store has
//! on SQLite). Same database, same statements; `BENCH_RUNS` rounds (default
//! 3) alternate the drivers and it prints µs per statement, median
//! (min–max). PostgreSQL when `GATEHOUSE_TEST_PG_URL` is set. It asserts
//! nothing about speed.

use std::time::Instant;

use gatehouse_core::store::Store;

const READ: &str = "SELECT c.id, c.slug, c.title, c.body, c.status, c.author, c.created_at, c.updated_at, c.published_at FROM content c WHERE c.slug = $1";
const LOCK: &str = "UPDATE audit_head SET seq = seq WHERE id = 1";
const INSERT: &str = "INSERT INTO bench_w (n, body) VALUES ($1, $2)";
const READS: usize = 20_000;
const WRITES: usize = 2_000;

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

/// µs per read sequentially, per read with 16 at once, per write transaction.
type Figures = (f64, f64, f64);

/// One generic body for every pool type (their executors differ in type only).
macro_rules! measure {
    ($pool:expr, $writer:expr) => {{
        let pool = $pool.clone();
        let writer = $writer.clone();
        let read = |pool| async move {
            let _: Row = sqlx::query_as(READ)
                .bind("welcome".to_string())
                .fetch_one(&pool)
                .await
                .unwrap();
        };
        for _ in 0..200 {
            read(pool.clone()).await;
        }
        let start = Instant::now();
        for _ in 0..READS {
            read(pool.clone()).await;
        }
        let seq = start.elapsed().as_secs_f64() * 1e6 / READS as f64;
        let start = Instant::now();
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    for _ in 0..READS / 16 {
                        read(pool.clone()).await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let conc = start.elapsed().as_secs_f64() * 1e6 / READS as f64;
        let start = Instant::now();
        for i in 0..WRITES {
            let mut tx = writer.begin().await.unwrap();
            sqlx::query(LOCK).execute(&mut *tx).await.unwrap();
            sqlx::query(INSERT)
                .bind(i as i64)
                .bind(format!("entry {i}"))
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
        let write = start.elapsed().as_secs_f64() * 1e6 / WRITES as f64;
        (seq, conc, write)
    }};
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn show(label: &str, runs: &[Figures]) {
    let col = |k: fn(&Figures) -> f64| {
        let xs: Vec<f64> = runs.iter().map(k).collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{:.1} ({lo:.1}–{hi:.1})", median(xs))
    };
    println!(
        "| {label} | {} | {} | {} |",
        col(|f| f.0),
        col(|f| f.1),
        col(|f| f.2)
    );
}

async fn scratch_table(store: &Store) {
    let ddl = "CREATE TABLE IF NOT EXISTS bench_w (n BIGINT NOT NULL, body TEXT NOT NULL)";
    sqlx::query(ddl).execute(store.pool()).await.unwrap();
}

#[tokio::main]
async fn main() {
    sqlx::any::install_default_drivers();
    let rounds: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("site");
    let site = gatehouse_core::site::init(&dir, Some("bench"), true, None)
        .await
        .unwrap();
    scratch_table(&site.store).await;
    site.store.close().await;
    let db = dir.join("gatehouse.db");
    let url = gatehouse_core::store::sqlite_url(&db);
    // The concrete pools get the store's settings (WAL, synchronous NORMAL).
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
        .busy_timeout(std::time::Duration::from_secs(15));
    // As the store's pools: no ping before each use (sqlx's default pings).
    let sqlite = sqlx::sqlite::SqlitePoolOptions::new()
        .test_before_acquire(false)
        .max_connections(4)
        .connect_with(opts.clone())
        .await
        .unwrap();
    let sqlite_w = sqlx::sqlite::SqlitePoolOptions::new()
        .test_before_acquire(false)
        .max_connections(1)
        .connect_with(opts)
        .await
        .unwrap();
    let store = Store::open(&url).await.unwrap();

    let pg = match gatehouse_test_pg::base_url() {
        Some(base) => {
            let (url, _) = gatehouse_test_pg::fresh_database(&base, "bench_any");
            let pg_dir = tmp.path().join("pg");
            let site = gatehouse_core::site::init(&pg_dir, Some("bench"), true, Some(&url))
                .await
                .unwrap();
            scratch_table(&site.store).await;
            let concrete = sqlx::postgres::PgPoolOptions::new()
                .test_before_acquire(false)
                .max_connections(8)
                .connect(&url)
                .await
                .unwrap();
            Some((concrete, Store::open(&url).await.unwrap()))
        }
        None => None,
    };

    let mut figures: Vec<(&str, Vec<Figures>)> = vec![
        ("sqlite concrete", vec![]),
        ("sqlite Any (store)", vec![]),
        ("postgres concrete", vec![]),
        ("postgres Any (store)", vec![]),
    ];
    for _ in 0..rounds {
        figures[0].1.push(measure!(sqlite, sqlite_w));
        figures[1].1.push(measure!(store.pool(), store.writer()));
        if let Some((concrete, store)) = &pg {
            figures[2].1.push(measure!(concrete, concrete));
            figures[3].1.push(measure!(store.pool(), store.writer()));
        }
    }
    println!(
        "µs per statement, median ({rounds} rounds, min–max); reads: {READS}, writes: {WRITES} sequential transactions"
    );
    println!("| driver | read, sequential | read, 16 at once | write transaction |");
    println!("|---|---|---|---|");
    for (label, runs) in &figures {
        if !runs.is_empty() {
            show(label, runs);
        }
    }
}
