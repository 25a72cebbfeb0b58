//! `cargo bench -p gatehouse-core --bench keys`: prints key verification time
//! with 10, 10,000 and 1,000,000 keys stored, and mint throughput, on SQLite
//! and — when `GATEHOUSE_TEST_PG_URL` is set (`scripts/pg.sh start`) — on
//! PostgreSQL. Verification should stay flat as keys grow: the key id is the
//! primary key and exactly one argon2 verification runs. It prints figures and
//! asserts nothing about speed.
//!
//! `GATEHOUSE_BENCH_MAX_KEYS` lowers the largest size (e.g. 100000) for a quick run.

use std::time::{Duration, Instant};

use gatehouse_core::access::keys::{self, RawKey};
use gatehouse_core::access::permissions::Role;
use gatehouse_core::store::{Store, keys as key_store, sqlite_url};
use gatehouse_core::time::now_ms;
use sqlx::Connection;

const SIZES: [u64; 3] = [10, 10_000, 1_000_000];
const VERIFY_SAMPLES: usize = 30;
const LOOKUP_SAMPLES: usize = 300;
const MINTS: usize = 24;

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn bench(name: &str, store: &Store, max_keys: u64) {
    println!("\n{name}");
    // One real key to verify, among the fillers.
    let minted = keys::mint(store, "bench", "bench", &[Role::Viewer], None)
        .await
        .unwrap();
    let key: RawKey = minted.key;
    let mut stored = 1u64;
    println!(
        "  {:>10}  {:>14}  {:>14}  {:>18}  {:>10}",
        "keys", "verify median", "verify p90", "lookup-only median", "load"
    );
    for size in SIZES.into_iter().filter(|s| *s <= max_keys) {
        let load = Instant::now();
        if size > stored {
            key_store::insert_filler(store, stored, size - stored, now_ms())
                .await
                .unwrap();
            stored = size;
        }
        let load = load.elapsed();
        keys::verify(store, &key).await.unwrap(); // warm: caches, last_used_at
        let mut times = Vec::new();
        for _ in 0..VERIFY_SAMPLES {
            let t = Instant::now();
            keys::verify(store, &key).await.unwrap();
            times.push(t.elapsed());
        }
        times.sort();
        let p90 = times[times.len() * 9 / 10];
        // The store's part alone: the indexed read a running server repeats per call.
        let mut lookups = Vec::new();
        for _ in 0..LOOKUP_SAMPLES {
            let t = Instant::now();
            keys::recheck(store, &minted.info.id).await.unwrap();
            lookups.push(t.elapsed());
        }
        println!(
            "  {:>10}  {:>14}  {:>14}  {:>18}  {:>10}",
            size,
            ms(median(times)),
            ms(p90),
            ms(median(lookups)),
            if size > 10 {
                format!("{:.1} s", load.as_secs_f64())
            } else {
                "-".into()
            }
        );
    }
    for tasks in [1usize, 2] {
        let t = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for w in 0..tasks {
            let store = store.clone();
            set.spawn(async move {
                for i in 0..MINTS / tasks {
                    keys::mint(
                        &store,
                        "bench",
                        &format!("mint {w}-{i}"),
                        &[Role::Viewer],
                        None,
                    )
                    .await
                    .unwrap();
                }
            });
        }
        set.join_all().await;
        let secs = t.elapsed().as_secs_f64();
        println!(
            "  mint throughput, {tasks} concurrent: {:.1} keys/s ({} mints in {:.2} s)",
            MINTS as f64 / secs,
            MINTS,
            secs
        );
    }
}

#[tokio::main]
async fn main() {
    let max_keys = std::env::var("GATEHOUSE_BENCH_MAX_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    println!(
        "key verification (argon2id m=19456 KiB, t=2, p=1) and mint throughput; {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&sqlite_url(&tmp.path().join("bench.db")))
        .await
        .unwrap();
    bench("SQLite (WAL, synchronous=NORMAL)", &store, max_keys).await;
    store.close().await;

    match std::env::var("GATEHOUSE_TEST_PG_URL")
        .ok()
        .filter(|s| !s.is_empty())
    {
        None => println!("\nPostgreSQL: skipped (set GATEHOUSE_TEST_PG_URL, see scripts/pg.sh)"),
        Some(base) => {
            let db = format!("gh_bench_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(&format!("{base}/postgres"))
                .await
                .unwrap();
            sqlx::Executor::execute(
                &mut admin,
                sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")),
            )
            .await
            .unwrap();
            let store = Store::open(&format!("{base}/{db}")).await.unwrap();
            bench("PostgreSQL (loopback)", &store, max_keys).await;
            store.close().await;
            sqlx::Executor::execute(
                &mut admin,
                sqlx::AssertSqlSafe(format!("DROP DATABASE {db}")),
            )
            .await
            .unwrap();
        }
    }
}
