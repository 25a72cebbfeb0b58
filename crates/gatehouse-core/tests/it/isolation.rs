//! The isolation layer against a hostile child (`tests/fixtures/hostile.py`):
//! each test is an attack that worked before the layer existed, named after
//! what it pins. Connections go through the site's saved definitions, exactly
//! as `gatehouse call` runs them.

use serde_json::{Value, json};

use crate::common::*;
use gatehouse_core::mcp::client::saved::{self, SavedConnection, SavedLimits};
use gatehouse_core::site::Site;

fn on_sqlite() -> bool {
    std::env::var("GATEHOUSE_TEST_PG_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .is_none()
}

async fn add_hostile(site: &Site, name: &str, limits: SavedLimits) {
    let conn = SavedConnection {
        name: name.into(),
        spec: python("hostile.py", &[]),
        limits,
        created_at: 0,
    };
    saved::add(&site.store, &conn).await.unwrap();
}

/// Runs one attack; its JSON outcome (`{"ok": …}`), or the call's error.
async fn attack(site: &Site, name: &str, tool: &str, args: Value) -> Result<Value, Value> {
    match saved::call(site, name, tool, args).await {
        Ok(report) => {
            let text = report.result.unwrap()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string();
            Ok(serde_json::from_str(&text).unwrap())
        }
        Err(e) => Err(serde_json::to_value(e.body()).unwrap()),
    }
}

async fn roles_of(site: &Site, email: &str) -> String {
    let user = gatehouse_core::site::users::get(&site.store, email)
        .await
        .unwrap()
        .unwrap();
    format!("{:?}", user.roles)
}

#[tokio::test]
async fn child_cannot_tamper_with_site_database_by_relative_path() {
    if !on_sqlite() {
        return; // a PostgreSQL site has no database file to reach
    }
    let (_tmp, site) = fresh_site("iso_rel").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let before = roles_of(&site, "viewer@example.com").await;
    let out = attack(
        &site,
        "h",
        "db_tamper",
        json!({"path": "../../../gatehouse.db", "email": "viewer@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(roles_of(&site, "viewer@example.com").await, before);
}

#[tokio::test]
async fn child_cannot_tamper_with_site_database_by_absolute_path() {
    if !on_sqlite() {
        return;
    }
    let (_tmp, site) = fresh_site("iso_abs").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let db = site.dir.join("gatehouse.db");
    let out = attack(
        &site,
        "h",
        "db_tamper",
        json!({"path": db, "email": "viewer@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert!(roles_of(&site, "viewer@example.com").await.contains("Viewer"));
}

#[tokio::test]
async fn child_cannot_open_another_sites_database_or_settings() {
    let (_tmp, site) = fresh_site("iso_other_a").await;
    let (_tmp2, other) = fresh_site("iso_other_b").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    for path in [
        other.dir.join("gatehouse.toml"),
        site.dir.join("gatehouse.toml"),
    ] {
        let out = attack(&site, "h", "read_file", json!({"path": path}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "read {}: {out}", path.display());
    }
    if on_sqlite() {
        let out = attack(
            &site,
            "h",
            "db_tamper",
            json!({"path": other.dir.join("gatehouse.db"), "email": "viewer@example.com"}),
        )
        .await
        .unwrap();
        assert_eq!(out["ok"], false, "{out}");
    }
}

#[tokio::test]
async fn child_cannot_write_outside_its_scratch_directory() {
    let (tmp, site) = fresh_site("iso_write").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    for path in [site.dir.join("planted.txt"), tmp.path().join("planted.txt")] {
        let out = attack(&site, "h", "write_file", json!({"path": path}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "wrote {}: {out}", path.display());
        assert!(!path.exists());
    }
}

#[tokio::test]
async fn child_cannot_read_the_host_environment_through_proc() {
    let (_tmp, site) = fresh_site("iso_environ").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let report = saved::call(&site, "h", "environ", json!({}))
        .await
        .unwrap();
    let text = report.result.unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let out: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(out["ok"], false, "{out}");
    // Nothing of the host's environment reached the stored stderr excerpt.
    assert!(
        !report.stderr.tail.contains("CARGO_MANIFEST_DIR"),
        "{}",
        report.stderr.tail
    );
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            state != 'Z' && state != 'X'
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn setsid_daemon_does_not_outlive_teardown() {
    gatehouse_core::sandbox::become_subreaper().unwrap();
    let (_tmp, site) = fresh_site("iso_daemon").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "daemon", json!({})).await.unwrap();
    let pid = out["pid"].as_i64().unwrap();
    let survived = alive(pid);
    if survived {
        // Do not leave it behind whatever the assertion says.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(!survived, "daemon {pid} outlived the connection");
}

#[tokio::test]
async fn scratch_filler_is_stopped_at_the_quota() {
    let (_tmp, site) = fresh_site("iso_fill").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    match attack(&site, "h", "fill", json!({"mb": 300})).await {
        Ok(out) => {
            assert_eq!(out["ok"], false, "300 MiB accepted: {out}");
            assert!(out["bytes"].as_u64().unwrap() < 300 << 20);
        }
        Err(e) => assert_eq!(e["code"], "RESOURCE_LIMIT", "{e}"),
    }
}

#[tokio::test]
async fn child_cannot_replace_the_scratch_root_with_a_symlink() {
    let (tmp, site) = fresh_site("iso_symlink").await;
    let victim = tmp.path().join("victim");
    std::fs::create_dir_all(victim.join("precious")).unwrap();
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(
        &site,
        "h",
        "replace_scratch_root",
        json!({"victim": victim}),
    )
    .await
    .unwrap();
    // The next connection sweeps the scratch root: it must not reach the victim.
    let _ = attack(&site, "h", "fill", json!({"mb": 0})).await;
    assert!(victim.join("precious").is_dir(), "sweep followed a symlink");
    assert_eq!(out["ok"], false, "{out}");
}

#[tokio::test]
async fn memory_ceiling_is_enforced_not_only_polled() {
    let (_tmp, site) = fresh_site("iso_alloc").await;
    add_hostile(
        &site,
        "h",
        SavedLimits {
            max_rss_bytes: Some(256 << 20),
            ..SavedLimits::default()
        },
    )
    .await;
    match attack(&site, "h", "alloc", json!({"mb": 1024})).await {
        Ok(out) => assert_eq!(out["ok"], false, "1 GiB allocated: {out}"),
        Err(e) => assert_eq!(e["code"], "RESOURCE_LIMIT", "{e}"),
    }
}
