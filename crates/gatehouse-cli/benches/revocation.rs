//! `cargo bench -p gatehouse-cli --bench revocation`: the two ways a
//! revocation can reach every `gatehouse serve` instance on one PostgreSQL,
//! measured on the same database (`GATEHOUSE_TEST_PG_URL`, e.g.
//! `scripts/pg.sh start`):
//!
//! - **a counter read per request** (what the server does): the access
//!   generation, one single-row primary-key read before each request; its cost
//!   is that read, one at a time and 16 at once on a pool of 16, next to a bare
//!   `SELECT 1` (the round trip alone);
//! - **`LISTEN/NOTIFY`**: nothing per request; a revocation commits the counter
//!   and a `NOTIFY` in one transaction and each instance's listening
//!   connection hears it. Measured: from the revoking transaction's commit
//!   returning to the listener receiving the notification.
//!
//! `BENCH_RUNS` rounds (default 3) alternate the figures; it prints µs,
//! median (min–max) over rounds. It asserts nothing about speed.

use std::time::{Duration, Instant};

use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};

const READS: usize = 5_000;
const NOTIFIES: usize = 500;

#[tokio::main]
async fn main() {
    let Some(base) = gatehouse_test_pg::base_url() else {
        println!("(revocation bench skipped: set GATEHOUSE_TEST_PG_URL, e.g. scripts/pg.sh start)");
        return;
    };
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3usize)
        .max(1);
    let (url, db) = gatehouse_test_pg::fresh_database(&base, "bench_revocation");
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .min_connections(16)
        .test_before_acquire(false)
        .connect(&url)
        .await
        .unwrap();
    // The store's table, as migrated.
    sqlx::query("CREATE TABLE access_generation (id INTEGER PRIMARY KEY CHECK (id = 1), gen BIGINT NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO access_generation (id, gen) VALUES (1, 0)")
        .execute(&pool)
        .await
        .unwrap();

    let mut rows: Vec<[f64; 6]> = Vec::new();
    for _ in 0..runs {
        let bare1 = per_read(&pool, "SELECT 1::BIGINT", 1).await;
        let gen1 = per_read(&pool, GENERATION, 1).await;
        let bare16 = per_read(&pool, "SELECT 1::BIGINT", 16).await;
        let gen16 = per_read(&pool, GENERATION, 16).await;
        let notify = notify_latency(&pool, &url).await;
        println!(
            "round: {{\"select1_us\":{bare1:.1},\"generation_us\":{gen1:.1},\"select1_16_us\":{bare16:.1},\"generation_16_us\":{gen16:.1},\"notify_p50_us\":{:.1},\"notify_p99_us\":{:.1}}}",
            notify.0, notify.1
        );
        rows.push([gen1, bare1, gen16, bare16, notify.0, notify.1]);
    }
    let col = |i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        format!("{:.1} ({:.1}–{:.1})", v[v.len() / 2], v[0], v[v.len() - 1])
    };
    println!("\nµs, median (min–max) over {runs} round(s):");
    println!("| figure | µs |\n|---|---|");
    println!("| counter read per request, 1 at a time | {} |", col(0));
    println!("| `SELECT 1`, 1 at a time (the round trip) | {} |", col(1));
    println!(
        "| counter read per request, 16 at once (per read) | {} |",
        col(2)
    );
    println!("| `SELECT 1`, 16 at once (per read) | {} |", col(3));
    println!(
        "| NOTIFY: commit returned → listener heard it, p50 | {} |",
        col(4)
    );
    println!(
        "| NOTIFY: commit returned → listener heard it, p99 | {} |",
        col(5)
    );

    pool.close().await;
    gatehouse_test_pg::psql(&format!("{base}/postgres"), &format!("DROP DATABASE {db}"));
}

const GENERATION: &str = "SELECT gen FROM access_generation WHERE id = 1";

/// µs per statement, `at_once` tasks each running their share in turn.
async fn per_read(pool: &PgPool, sql: &'static str, at_once: usize) -> f64 {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..at_once {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..READS / at_once {
                let v: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
                std::hint::black_box(v);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed().as_secs_f64() * 1e6 / READS as f64
}

/// p50 and p99 µs from a revoking transaction's commit returning to a
/// listening connection receiving its `NOTIFY`, one revocation at a time.
async fn notify_latency(pool: &PgPool, url: &str) -> (f64, f64) {
    let mut listener = PgListener::connect(url).await.unwrap();
    listener.listen("gatehouse_access").await.unwrap();
    let mut lat = Vec::with_capacity(NOTIFIES);
    for i in 0..NOTIFIES {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("UPDATE access_generation SET gen = gen + 1 WHERE id = 1")
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query("SELECT pg_notify('gatehouse_access', $1)")
            .bind(i.to_string())
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let committed = Instant::now();
        let heard = tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .expect("the notification arrives")
            .unwrap();
        lat.push(committed.elapsed().as_secs_f64() * 1e6);
        assert_eq!(heard.payload(), i.to_string());
    }
    lat.sort_by(f64::total_cmp);
    (lat[NOTIFIES / 2], lat[NOTIFIES * 99 / 100])
}
