//! The isolation layer against a hostile child (`tests/fixtures/hostile.py`):
//! each test is an attack that worked before the layer existed, named after
//! what it pins. Connections go through the site's saved definitions, exactly
//! as `gatehouse call` runs them.

use serde_json::{Value, json};

use crate::common::*;
use gatehouse_core::connections::saved::{self, SavedConnection, SavedLimits};
use gatehouse_core::sandbox::{Backend, Profile};
use gatehouse_core::site::Site;

fn on_sqlite() -> bool {
    gatehouse_test_pg::base_url().is_none()
}

async fn add_hostile(site: &Site, name: &str, limits: SavedLimits) {
    let conn = SavedConnection {
        name: name.into(),
        spec: python("hostile.py", &[]),
        limits,
        created_at: 0,
    };
    saved::add(&site.store, "test", &conn).await.unwrap();
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

/// The hostile server as `name` under the `none` backend: the control that
/// shows an attack works without the isolation, so its refusal is the
/// isolation's.
async fn add_control(site: &Site, name: &str) {
    let none = Profile {
        backend: Backend::None,
        ..Profile::default()
    };
    add_hostile(site, name, with_profile(none)).await;
}

async fn roles_of(site: &Site, email: &str) -> String {
    let user = gatehouse_core::access::users::get(&site.store, email)
        .await
        .unwrap()
        .unwrap();
    format!("{:?}", user.roles)
}

/// The site database reached by a path relative to the child's working
/// directory: the old layout's `../../../gatehouse.db` (scratch was
/// `<site>/run/scratch/c-…`) and the real way up from wherever scratch is
/// now. The same walk under the `none` backend is the control: it does reach
/// and change the database, so the refusal above it is the isolation's.
#[tokio::test]
async fn child_cannot_tamper_with_site_database_by_relative_path() {
    if !on_sqlite() {
        return; // a PostgreSQL site has no database file to reach
    }
    let (_tmp, site) = fresh_site("iso_rel").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let db = site.dir.canonicalize().unwrap().join("gatehouse.db");
    let viewer = "viewer@example.com";
    let before = roles_of(&site, viewer).await;
    let old_layout = attack(
        &site,
        "h",
        "db_tamper",
        json!({"path": "../../../gatehouse.db", "email": viewer}),
    )
    .await
    .unwrap();
    assert_eq!(old_layout["ok"], false, "{old_layout}");
    let cwd = std::path::PathBuf::from(old_layout["cwd"].as_str().unwrap());
    assert!(
        !cwd.starts_with(site.dir.canonicalize().unwrap()),
        "scratch {} is inside the site",
        cwd.display()
    );
    let walked = attack(
        &site,
        "h",
        "db_tamper",
        json!({"path": db, "relative": true, "email": viewer}),
    )
    .await
    .unwrap();
    assert!(
        walked["path"].as_str().unwrap().starts_with(".."),
        "{walked}"
    );
    assert_eq!(walked["ok"], false, "{walked}");
    assert_eq!(roles_of(&site, viewer).await, before);

    add_control(&site, "control").await;
    let control = attack(
        &site,
        "control",
        "db_tamper",
        json!({"path": db, "relative": true, "email": viewer}),
    )
    .await
    .unwrap();
    assert_eq!(control["ok"], true, "{control}");
    assert!(roles_of(&site, viewer).await.contains("Admin"));
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
    assert!(
        roles_of(&site, "viewer@example.com")
            .await
            .contains("Viewer")
    );
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
    // What the CLI and the desktop app do first thing.
    gatehouse_core::sandbox::harden_host().unwrap();
    assert!(!gatehouse_core::sandbox::linux::host::is_dumpable());
    let (_tmp, site) = fresh_site("iso_environ").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let report = saved::call(&site, "h", "environ", json!({})).await.unwrap();
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
    // A small quota keeps the test light on disk; the default is 256 MiB.
    let limits = SavedLimits {
        sandbox: Profile {
            scratch_quota_bytes: Some(32 << 20),
            ..Profile::default()
        },
        ..SavedLimits::default()
    };
    add_hostile(&site, "h", limits).await;
    match attack(&site, "h", "fill", json!({"mb": 300})).await {
        Ok(out) => {
            assert_eq!(out["ok"], false, "300 MiB accepted: {out}");
            assert!(out["bytes"].as_u64().unwrap() < 300 << 20);
        }
        Err(e) => assert_eq!(e["code"], "RESOURCE_LIMIT", "{e}"),
    }
}

/// Many files, each below the per-file ceiling (`RLIMIT_FSIZE`), past the
/// quota in total: the watchdog stops the server and the call says why.
#[tokio::test]
async fn scratch_filler_in_small_files_is_stopped_with_the_quota_as_reason() {
    let (_tmp, site) = fresh_site("iso_fill_files").await;
    let limits = with_profile(Profile {
        scratch_quota_bytes: Some(32 << 20),
        ..Profile::default()
    });
    add_hostile(&site, "h", limits).await;
    // 2 ms per MiB: 200 MiB take ~0.5 s, several watchdog rounds; a full
    // scratch tmpfs does not stop it either.
    let e = attack(
        &site,
        "h",
        "fill",
        json!({"mb": 200, "per": 4, "pause_ms": 2, "persist_s": 10}),
    )
    .await
    .expect_err("the server was not stopped");
    assert_eq!(e["code"], "RESOURCE_LIMIT", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("scratch_quota"), "{e}");
}

/// A file deleted while still open, still mapped (one page) with its
/// descriptor closed, or with its only descriptor in flight on a socket, no
/// longer shows in the scratch directory but keeps its blocks; files 100
/// folders down hid from a walk by path: a quota that only walked the
/// directory let such a filler write without end. The scratch tmpfs holds
/// every way to its size; the watchdog then stops the server.
#[tokio::test]
async fn scratch_filler_holding_deleted_files_is_stopped_at_the_quota() {
    let (_tmp, site) = fresh_site("iso_fill_deleted").await;
    let limits = with_profile(Profile {
        scratch_quota_bytes: Some(32 << 20),
        ..Profile::default()
    });
    add_hostile(&site, "h", limits).await;
    let ways = [
        json!({"unlink": true}),
        json!({"nest": 100}),
        json!({"unlink": true, "mmap": true}),
        json!({"unlink": true, "in_flight": true}),
    ];
    for how in ways {
        let mut args = json!({"mb": 200, "per": 4, "pause_ms": 2, "persist_s": 10});
        args.as_object_mut()
            .unwrap()
            .extend(how.as_object().unwrap().clone());
        let e = attack(&site, "h", "fill", args)
            .await
            .expect_err(&format!("the server was not stopped ({how})"));
        assert_eq!(e["code"], "RESOURCE_LIMIT", "{how}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("scratch_quota"), "{how}: {e}");
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
async fn scratch_cleanup_does_not_follow_symlinks_planted_by_the_child() {
    let (tmp, site) = fresh_site("iso_planter").await;
    let victim = tmp.path().join("victim");
    std::fs::create_dir_all(victim.join("precious")).unwrap();
    std::fs::write(victim.join("precious/file"), "keep").unwrap();
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "plant_symlinks", json!({"victim": victim}))
        .await
        .unwrap();
    // Planting inside its own scratch is allowed; following them is not.
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(
        std::fs::read_to_string(victim.join("precious/file")).unwrap(),
        "keep",
        "teardown followed a planted symlink"
    );
}

#[tokio::test]
async fn memory_ceiling_is_enforced_not_only_polled() {
    let (_tmp, site) = fresh_site("iso_alloc").await;
    add_hostile(&site, "h", with_rss_ceiling(256 << 20)).await;
    // Refused inside the child at once (RLIMIT_DATA: a MemoryError, the call
    // completes), not seen later by the RSS poll (which would kill the group:
    // RESOURCE_LIMIT, after the memory was already taken).
    let out = attack(&site, "h", "alloc", json!({"mb": 1024})).await;
    let out = out.unwrap_or_else(|e| panic!("the ceiling was only polled: {e}"));
    assert_eq!(out["ok"], false, "1 GiB allocated: {out}");
    assert!(
        out["error"].as_str().unwrap().starts_with("MemoryError"),
        "{out}"
    );
}

/// Memory written into a memfd is neither mapped (no RSS for the poll) nor
/// private data (no `RLIMIT_DATA`), and each file stays below the per-file
/// ceiling: 512 MiB in 32 MiB memfds went past a 256 MiB ceiling.
/// `memfd_create` is refused with `ENOSYS` (runtimes then fall back to a
/// file in scratch, which the tmpfs bounds); the `none` backend is the control.
#[tokio::test]
async fn child_cannot_hoard_memory_in_a_memfd_past_its_ceiling() {
    let (_tmp, site) = fresh_site("iso_memfd").await;
    add_hostile(&site, "h", with_rss_ceiling(256 << 20)).await;
    let out = attack(&site, "h", "memfd", json!({"mb": 512, "per": 32}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "512 MiB held in memfds: {out}");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("Function not implemented"),
        "{out}"
    );
    add_control(&site, "none").await;
    let out = attack(&site, "none", "memfd", json!({"mb": 8, "per": 8}))
        .await
        .unwrap();
    assert_eq!(out["ok"], true, "the control made no memfd: {out}");
}

/// The niceness this test process runs at (a child never goes below it).
fn own_nice() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command's closing parenthesis; niceness is field 19.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(16).unwrap().parse().unwrap()
}

#[tokio::test]
async fn child_runs_below_the_host_and_cannot_take_its_priority_back() {
    let (_tmp, site) = fresh_site("iso_nice").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "renice", json!({})).await.unwrap();
    let expected = own_nice().max(i64::from(gatehouse_core::sandbox::DEFAULT_NICE));
    assert_eq!(out["before"], expected, "{out}");
    assert_eq!(out["ok"], false, "the child lowered its niceness: {out}");

    // An admin may widen it back to the host's priority.
    add_hostile(
        &site,
        "h0",
        with_profile(Profile {
            nice: Some(0),
            ..Profile::default()
        }),
    )
    .await;
    let out = attack(&site, "h0", "renice", json!({})).await.unwrap();
    assert_eq!(out["before"], own_nice(), "{out}");
}

fn with_profile(profile: Profile) -> SavedLimits {
    SavedLimits {
        sandbox: profile,
        ..SavedLimits::default()
    }
}

fn with_rss_ceiling(bytes: u64) -> SavedLimits {
    SavedLimits {
        max_rss_bytes: Some(bytes),
        ..SavedLimits::default()
    }
}

/// The hostile server twice: `off` with the default profile (no network),
/// `on` with the network allowed.
async fn add_off_and_on(site: &Site) {
    add_hostile(site, "off", SavedLimits::default()).await;
    let on = Profile {
        network: true,
        ..Profile::default()
    };
    add_hostile(site, "on", with_profile(on)).await;
}

/// A listener on the loopback interface, for network attacks.
fn listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

#[tokio::test]
async fn child_without_network_cannot_open_tcp_connections() {
    let (_tmp, site) = fresh_site("iso_net").await;
    let (_l, port) = listener();
    add_off_and_on(&site).await;
    let args = json!({"host": "127.0.0.1", "port": port});
    let off = attack(&site, "off", "connect", args.clone()).await.unwrap();
    assert_eq!(off["ok"], false, "{off}");
    let on = attack(&site, "on", "connect", args).await.unwrap();
    assert_eq!(on["ok"], true, "the profile allows the network: {on}");
}

/// Landlock's TCP rules look at the protocol: a stream socket of another
/// protocol (MPTCP falls back to plain TCP on the wire) must not connect
/// where TCP may not.
#[tokio::test]
async fn child_without_network_cannot_connect_over_mptcp() {
    let (_tmp, site) = fresh_site("iso_mptcp").await;
    let (_l, port) = listener();
    add_off_and_on(&site).await;
    let args = json!({"host": "127.0.0.1", "port": port, "proto": 262});
    let off = attack(&site, "off", "connect", args.clone()).await.unwrap();
    assert_eq!(off["ok"], false, "{off}");
    let on = attack(&site, "on", "connect", args).await.unwrap();
    assert_eq!(on["ok"], true, "the profile allows the network: {on}");
}

/// Landlock's network rules cover TCP only: a child without network must not
/// get UDP either (a datagram to any host is enough to leak what it read).
#[tokio::test]
async fn child_without_network_cannot_send_udp() {
    let (_tmp, site) = fresh_site("iso_udp").await;
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = sink.local_addr().unwrap().port();
    add_off_and_on(&site).await;
    let args = json!({"host": "127.0.0.1", "port": port, "payload": "leak"});
    let off = attack(&site, "off", "udp_send", args.clone())
        .await
        .unwrap();
    assert_eq!(off["ok"], false, "{off}");
    let mut buf = [0u8; 16];
    assert!(sink.recv(&mut buf).is_err(), "a datagram got out");
    let on = attack(&site, "on", "udp_send", args).await.unwrap();
    assert_eq!(on["ok"], true, "the profile allows the network: {on}");
    let n = sink.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"leak");
}

/// A named UNIX socket outside the sandbox (the user's D-Bus session bus,
/// Docker's socket) is a way out: D-Bus alone can ask systemd to run any
/// command unconfined. Landlock's file rules do not cover connecting to one.
#[tokio::test]
async fn child_cannot_connect_to_named_unix_sockets_outside_its_profile() {
    let (tmp, site) = fresh_site("iso_unix").await;
    let path = tmp.path().join("bus.sock");
    let bus = std::os::unix::net::UnixListener::bind(&path).unwrap();
    bus.set_nonblocking(true).unwrap();
    add_hostile(&site, "h", SavedLimits::default()).await;
    let args = json!({"path": path, "payload": "hello"});
    let out = attack(&site, "h", "unix_connect", args.clone())
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert!(bus.accept().is_err(), "the child reached the socket");

    // UNIX sockets are the admin's to grant.
    add_hostile(
        &site,
        "granted",
        with_profile(Profile {
            unix_sockets: true,
            ..Profile::default()
        }),
    )
    .await;
    let out = attack(&site, "granted", "unix_connect", args)
        .await
        .unwrap();
    assert_eq!(out["ok"], true, "{out}");
}

/// Found by an attack run: a child set the host's RLIMIT_FSIZE to 0 with
/// `prlimit` and the host died at its next write. Another process's limits
/// are refused (here the harmless core limit, set to the child's own).
#[tokio::test]
async fn child_cannot_change_the_hosts_limits() {
    let (_tmp, site) = fresh_site("iso_prlimit").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "prlimit_parent", json!({}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
}

/// Every backend sets `no_new_privs` (a setuid program cannot raise the
/// child's privileges) and the profile's ceilings: open files are refused at
/// `max_open_files`, and the process ceiling is set (`RLIMIT_NPROC` counts the
/// user's processes, so it is the user's count plus the profile's; root is
/// exempt from it by the kernel, docs/decisions.md).
#[tokio::test]
async fn every_backend_sets_no_new_privs_and_the_profiles_ceilings() {
    let (_tmp, site) = fresh_site("iso_limits").await;
    let mut backends = vec![Backend::Landlock, Backend::None];
    if !bwrap_missing() {
        backends.push(Backend::Bwrap);
    }
    for backend in backends {
        let name = format!("h-{}", backend.as_str());
        let profile = Profile {
            backend,
            max_open_files: Some(64),
            max_processes: Some(8),
            ..Profile::default()
        };
        add_hostile(&site, &name, with_profile(profile)).await;
        let out = attack(&site, &name, "limits", json!({"open": 200}))
            .await
            .unwrap();
        assert_eq!(out["no_new_privs"], 1, "{out}");
        assert_eq!(out["nofile"], json!([64, 64]), "{out}");
        let opened = out["opened"].as_u64().unwrap();
        assert!((50..64).contains(&opened), "{out}");
        assert_eq!(out["stopped"], "Too many open files", "{out}");
        let nproc = out["nproc"][0].as_u64().unwrap();
        assert!((8..100_000).contains(&nproc), "{out}");
    }
}

/// `listen` on an unbound socket binds an ephemeral port by itself, past
/// Landlock's `bind` rules: without network, no inbound server either.
#[tokio::test]
async fn child_without_network_cannot_listen() {
    let (_tmp, site) = fresh_site("iso_listen").await;
    add_off_and_on(&site).await;
    let off = attack(&site, "off", "listen", json!({})).await.unwrap();
    assert_eq!(off["ok"], false, "{off}");
    let on = attack(&site, "on", "listen", json!({})).await.unwrap();
    assert_eq!(on["ok"], true, "the profile allows the network: {on}");
}

/// A datagram `socketpair` needs no `socket(AF_UNIX)` yet can send to any
/// named socket: refused without UNIX sockets.
#[tokio::test]
async fn child_cannot_reach_a_named_socket_through_a_datagram_pair() {
    let (tmp, site) = fresh_site("iso_dgram_pair").await;
    let path = tmp.path().join("victim.dgram");
    let victim = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    victim.set_nonblocking(true).unwrap();
    add_hostile(&site, "h", SavedLimits::default()).await;
    // A UNIX `SOCK_RAW` pair is a datagram pair to the kernel.
    for kind in ["dgram", "raw"] {
        let args = json!({"path": path, "payload": "hi", "type": kind});
        let out = attack(&site, "h", "dgram_pair", args).await.unwrap();
        assert_eq!(out["ok"], false, "{kind}: {out}");
        let mut buf = [0u8; 8];
        assert!(
            victim.recv(&mut buf).is_err(),
            "a datagram arrived ({kind})"
        );
    }
}

/// The kernel keyring holds the user's secrets (a child read one another
/// program had stored): every keyring call is refused.
#[tokio::test]
async fn child_cannot_use_the_kernel_keyring() {
    let (_tmp, site) = fresh_site("iso_keyring").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "keyring", json!({})).await.unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"], "Permission denied", "{out}");
}

/// Landlock does not rule a file's mode: a child made the site database
/// writable by every user. Group- and world-writable modes are refused.
#[tokio::test]
async fn child_cannot_make_the_site_database_writable_by_others() {
    if !on_sqlite() {
        return;
    }
    let (_tmp, site) = fresh_site("iso_chmod").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let db = site.dir.join("gatehouse.db");
    let before = std::fs::metadata(&db).unwrap().permissions();
    for mode in ["666", "4755", "2755"] {
        let out = attack(&site, "h", "chmod", json!({"path": db, "mode": mode}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "{mode}: {out}");
    }
    assert_eq!(std::fs::metadata(&db).unwrap().permissions(), before);
    // Nor through an ACL (found by the second attack run): no attribute
    // write at all, refused with EPERM, which copying tools step over.
    let out = attack(&site, "h", "acl", json!({"path": db}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("Operation not permitted"),
        "{out}"
    );
    assert_eq!(std::fs::metadata(&db).unwrap().permissions(), before);
}

/// Landlock rules what may be opened, not a file's mode or times: a child
/// made a private file of the user readable by every user (`chmod 644`),
/// locked the user out of it (`000`) and reset its times. Under the
/// read-only view every mount but scratch refuses them; in scratch they
/// still work; the `none` backend (the control) lets them through.
#[tokio::test]
async fn child_cannot_change_the_mode_or_times_of_files_outside_scratch() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, site) = fresh_site("iso_metadata").await;
    let victim = tmp.path().join("id_ed25519");
    std::fs::write(&victim, "private key").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mtime = || std::fs::metadata(&victim).unwrap().modified().unwrap();
    let mode = || std::fs::metadata(&victim).unwrap().permissions().mode() & 0o7777;
    let before = mtime();
    add_hostile(&site, "h", SavedLimits::default()).await;
    for m in ["644", "000"] {
        let out = attack(&site, "h", "chmod", json!({"path": victim, "mode": m}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "chmod {m}: {out}");
        assert!(
            out["error"]
                .as_str()
                .unwrap()
                .contains("Read-only file system"),
            "{out}"
        );
    }
    let out = attack(&site, "h", "utime", json!({"path": victim}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(mode(), 0o600);
    assert_eq!(mtime(), before);
    if on_sqlite() {
        let db = site.dir.join("gatehouse.db");
        let out = attack(&site, "h", "chmod", json!({"path": db, "mode": "644"}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "{out}");
    }
    // Its own scratch stays its own to change.
    for (tool, args) in [
        ("chmod", json!({"path": ".", "mode": "700"})),
        ("utime", json!({"path": "."})),
    ] {
        let own = attack(&site, "h", tool, args).await.unwrap();
        assert_eq!(own["ok"], true, "{tool}: {own}");
    }

    add_control(&site, "none").await;
    let out = attack(
        &site,
        "none",
        "chmod",
        json!({"path": victim, "mode": "644"}),
    )
    .await
    .unwrap();
    assert_eq!(out["ok"], true, "the control could not chmod: {out}");
    assert_eq!(mode(), 0o644);
}

/// The process ceiling holds whoever runs the host: the kernel exempts root
/// from `RLIMIT_NPROC` (as root, a child forked 40 processes against a
/// ceiling of 8), so a root host puts each child in a pids cgroup.
#[tokio::test]
async fn process_ceiling_holds_for_a_root_host_too() {
    let (_tmp, site) = fresh_site("iso_nproc").await;
    for backend in [Backend::Landlock, Backend::None] {
        let name = format!("h-{}", backend.as_str());
        let profile = Profile {
            backend,
            max_processes: Some(8),
            ..Profile::default()
        };
        add_hostile(&site, &name, with_profile(profile)).await;
        let report = saved::probe(&site, &name).await.unwrap();
        assert!(
            !report
                .isolation
                .warnings
                .iter()
                .any(|w| w.contains("not enforced")),
            "{:?}",
            report.isolation.warnings
        );
        let out = attack(&site, &name, "forks", json!({"n": 40}))
            .await
            .unwrap();
        assert_eq!(out["ok"], false, "{backend:?}: {out}");
        // The user's other processes count against RLIMIT_NPROC too, so a
        // non-root host's child gets no more than the ceiling, maybe fewer.
        assert!(out["forked"].as_u64().unwrap() < 8, "{backend:?}: {out}");
        assert!(
            out["error"]
                .as_str()
                .unwrap()
                .contains("Resource temporarily unavailable"),
            "{out}"
        );
    }
}

/// System V segments and queues are memory no ceiling counts, and a
/// child's, made in the host's IPC namespace, outlived it (an attack run
/// left 1.5 GiB behind). The child has an IPC namespace of its own, and
/// `shmget`/`msgget` are refused in it. The `none` backend is the control:
/// its segment lands in the host's namespace.
#[tokio::test]
async fn child_cannot_make_system_v_shared_memory_or_message_queues() {
    let (_tmp, site) = fresh_site("iso_shm").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    add_control(&site, "none").await;
    // /proc/sysvipc/shm: key shmid perms size cpid …, as the host sees them.
    let made_by = |pid: &Value| {
        std::fs::read_to_string("/proc/sysvipc/shm")
            .unwrap()
            .lines()
            .skip(1)
            .filter(|l| l.split_whitespace().nth(4) == Some(&pid.to_string()))
            .map(|l| l.split_whitespace().nth(1).unwrap().parse::<i32>().unwrap())
            .collect::<Vec<_>>()
    };
    // Refused outright: an attack run held 1 GiB of segments (attached a
    // piece at a time, so never much RSS) and 400 MiB of queued messages.
    for args in [json!({"mb": 1}), json!({"queue": true})] {
        let out = attack(&site, "h", "shm", args).await.unwrap();
        assert_eq!(out["ok"], false, "{out}");
        assert_eq!(out["error"], "Function not implemented", "{out}");
    }
    let out = attack(&site, "none", "shm", json!({"mb": 1}))
        .await
        .unwrap();
    let left = made_by(&out["pid"]);
    for id in &left {
        // SAFETY: removing a segment by id; no memory of ours is involved.
        #[allow(unsafe_code)]
        unsafe {
            nix::libc::shmctl(*id, nix::libc::IPC_RMID, std::ptr::null_mut());
        }
    }
    assert_eq!(
        left.len(),
        1,
        "the control's segment was not in the host's namespace: {out}"
    );
}

/// In a user namespace of its own a child could chroot away from the host's
/// measure of its scratch and make fresh IPC namespaces; refused. The `none`
/// backend is the control.
#[tokio::test]
async fn child_cannot_make_a_user_namespace_of_its_own() {
    let (_tmp, site) = fresh_site("iso_userns").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "userns", json!({})).await.unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"], "Operation not permitted", "{out}");
    add_control(&site, "none").await;
    let out = attack(&site, "none", "userns", json!({})).await.unwrap();
    assert_eq!(out["ok"], true, "the control made no user namespace: {out}");
}

/// Unnamed temporary files in scratch (`O_TMPFILE`, as SQLite and Python's
/// `TemporaryFile` make) are counted once: the tmpfs and the descriptors'
/// count together killed a server holding 18 MiB against a 32 MiB quota.
#[tokio::test]
async fn temporary_files_in_scratch_count_once_against_the_quota() {
    let (_tmp, site) = fresh_site("iso_tmpfiles").await;
    let limits = with_profile(Profile {
        scratch_quota_bytes: Some(32 << 20),
        ..Profile::default()
    });
    add_hostile(&site, "h", limits).await;
    let out = attack(&site, "h", "tmpfiles", json!({"mb": 18, "hold": 1.5}))
        .await
        .unwrap_or_else(|e| panic!("18 MiB of a 32 MiB quota was stopped: {e}"));
    assert_eq!(out["ok"], true, "{out}");
}

/// A descendant that leaves the process group (`setpgid`) holding shared
/// memory (which `RLIMIT_DATA` does not count) still counts toward the
/// memory ceiling: 600 MiB went past a 256 MiB ceiling that summed the
/// group alone.
#[tokio::test]
async fn memory_of_a_descendant_that_left_the_group_still_counts() {
    let (_tmp, site) = fresh_site("iso_leave_group").await;
    add_hostile(&site, "h", with_rss_ceiling(256 << 20)).await;
    let e = attack(&site, "h", "leave_group", json!({"mb": 400, "hold": 5}))
        .await
        .expect_err("400 MiB held outside the group past a 256 MiB ceiling");
    assert_eq!(e["code"], "RESOURCE_LIMIT", "{e}");
    assert!(e["message"].as_str().unwrap().contains("max_rss"), "{e}");
}

/// The window shows what the ceiling measures: a descendant that left the
/// group still counts in the connection's live usage (it showed the group
/// alone, ~15 MiB, while the ceiling saw the 200 MiB held outside it).
#[tokio::test]
async fn live_usage_counts_a_descendant_that_left_the_group() {
    let (_tmp, site) = fresh_site("iso_leave_group_usage").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let conn = saved::open(&site, "h").await.unwrap();
    let out = conn
        .call_tool(
            "leave_group",
            json!({"mb": 200, "hold": 0}),
            Default::default(),
        )
        .await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut rss = 0;
    while std::time::Instant::now() < deadline {
        rss = conn.usage().unwrap().rss_bytes;
        if rss >= 200 << 20 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    conn.close().await;
    assert!(rss >= 200 << 20, "live usage showed {} MiB", rss >> 20);
}

/// A lease on a file the child may only read (one its uid owns: for a root
/// host, every system file) stalled the host's writers of that file for the
/// lease-break time. Refused; the `none` backend is the control.
#[tokio::test]
async fn child_cannot_take_a_lease_on_a_file_it_may_read() {
    let (tmp, site) = fresh_site("iso_lease").await;
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let file = data.join("shared.txt");
    std::fs::write(&file, "read by the child").unwrap();
    for backend in [Backend::Landlock, Backend::None] {
        let name = format!("h-{}", backend.as_str());
        let profile = Profile {
            backend,
            // `none` reads everything already (and refuses paths).
            read_only: if backend == Backend::None {
                Vec::new()
            } else {
                vec![data.clone()]
            },
            ..Profile::default()
        };
        add_hostile(&site, &name, with_profile(profile)).await;
        let out = attack(&site, &name, "lease", json!({"path": file}))
            .await
            .unwrap();
        let refused = backend == Backend::Landlock;
        assert_eq!(out["ok"], !refused, "{backend:?}: {out}");
    }
}

/// `clone3` carries its flags in a structure seccomp cannot read;
/// `CLONE_INTO_CGROUP` there put an attack run's child into a cgroup of its
/// choosing. It is refused with `ENOSYS`, and threads still start (the C
/// library falls back to `clone`).
#[tokio::test]
async fn clone3_is_refused_and_threads_still_start() {
    let (_tmp, site) = fresh_site("iso_clone3").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "clone3", json!({})).await.unwrap();
    assert_eq!(out["clone3_error"], "Function not implemented", "{out}");
    assert_eq!(out["thread_ran"], true, "{out}");
}

/// The user's config folder holds the audit signing key (what makes the
/// checkpoints, and now the site exports, trustworthy): no Landlock child
/// reads it. The `none` backend is the control.
#[tokio::test]
async fn child_cannot_read_the_audit_signing_key() {
    let (_tmp, site) = fresh_site("iso_audit_key").await;
    let config = gatehouse_core::host_env::config_dir().unwrap();
    gatehouse_core::site::checkpoint::signer::Signer::load_or_create(&config).unwrap();
    let key = config.join(gatehouse_core::site::checkpoint::signer::KEY_FILE);
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "read_file", json!({"path": key}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
    add_control(&site, "none").await;
    let out = attack(&site, "none", "read_file", json!({"path": key}))
        .await
        .unwrap();
    assert_eq!(out["ok"], true, "the control could not read the key: {out}");
}

/// A descriptor the host inherited without close-on-exec (a shell redirect,
/// a launcher) would reach the child past Landlock, which rules only what is
/// opened: every descriptor above stderr closes at the child's exec.
#[tokio::test]
async fn child_does_not_inherit_the_hosts_open_files() {
    use std::os::fd::AsRawFd;
    let (tmp, site) = fresh_site("iso_fds").await;
    let secret = tmp.path().join("inherited-secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let file = std::fs::File::open(&secret).unwrap();
    // As a shell redirect leaves it: open across exec.
    nix::fcntl::fcntl(
        file.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "fds", json!({})).await.unwrap();
    drop(file);
    let seen = out["fds"].to_string();
    assert!(
        !seen.contains("inherited-secret"),
        "the child holds the host's descriptor: {seen}"
    );
}

/// Found by an attack run: a script kept in the folder that also holds the
/// site had that whole folder granted (the guess of what a script needs),
/// and the child read the site database and the settings beside it.
#[tokio::test]
async fn a_script_beside_the_site_does_not_open_the_site_to_its_server() {
    let (tmp, site) = fresh_site("iso_beside").await;
    let script = tmp.path().join("hostile.py");
    std::fs::copy(fixture("hostile.py"), &script).unwrap();
    let conn = SavedConnection {
        name: "beside".into(),
        spec: gatehouse_core::sandbox::ChildSpec::new("python3").arg(script.to_string_lossy()),
        limits: SavedLimits::default(),
        created_at: 0,
    };
    saved::add(&site.store, "test", &conn).await.unwrap();
    let settings = site.dir.join("gatehouse.toml");
    assert!(settings.is_file());
    let out = attack(&site, "beside", "read_file", json!({"path": settings}))
        .await
        .unwrap();
    assert_eq!(out["ok"], false, "{out}");
}

/// io_uring makes sockets (and opens files) without the system calls the
/// socket filter sees: it is refused outright.
#[tokio::test]
async fn child_cannot_set_up_io_uring() {
    let (_tmp, site) = fresh_site("iso_uring").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let out = attack(&site, "h", "io_uring", json!({})).await.unwrap();
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"], "Permission denied", "{out}");
}

#[tokio::test]
async fn allowed_port_is_the_only_tcp_the_child_gets() {
    if !gatehouse_core::sandbox::linux::landlock::probe().network() {
        eprintln!("SKIPPED: Landlock without TCP rules");
        return;
    }
    let (_tmp, site) = fresh_site("iso_port").await;
    let (_a, allowed) = listener();
    let (_b, other) = listener();
    add_hostile(
        &site,
        "p",
        with_profile(Profile {
            connect_ports: vec![allowed],
            ..Profile::default()
        }),
    )
    .await;
    let ok = attack(
        &site,
        "p",
        "connect",
        json!({"host": "127.0.0.1", "port": allowed}),
    )
    .await
    .unwrap();
    assert_eq!(ok["ok"], true, "the listed port: {ok}");
    let denied = attack(
        &site,
        "p",
        "connect",
        json!({"host": "127.0.0.1", "port": other}),
    )
    .await
    .unwrap();
    assert_eq!(denied["ok"], false, "another port: {denied}");
}

#[tokio::test]
async fn profile_paths_widen_what_the_child_may_touch() {
    let (tmp, site) = fresh_site("iso_widen").await;
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("in.txt"), "hello").unwrap();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    add_hostile(
        &site,
        "h",
        with_profile(Profile {
            read_only: vec![data.clone()],
            read_write: vec![out_dir.clone()],
            ..Profile::default()
        }),
    )
    .await;
    let read = attack(
        &site,
        "h",
        "read_file",
        json!({"path": data.join("in.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(read["ok"], true, "{read}");
    let write_ro = attack(
        &site,
        "h",
        "write_file",
        json!({"path": data.join("x.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(write_ro["ok"], false, "read-only path written: {write_ro}");
    let write = attack(
        &site,
        "h",
        "write_file",
        json!({"path": out_dir.join("x.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(write["ok"], true, "{write}");
}

#[tokio::test]
async fn probe_reports_the_isolation_in_force() {
    let (_tmp, site) = fresh_site("iso_probe").await;
    add_hostile(&site, "h", SavedLimits::default()).await;
    let report = saved::probe(&site, "h").await.unwrap();
    let support = gatehouse_core::sandbox::linux::landlock::probe();
    assert_eq!(report.isolation.backend, "landlock");
    assert_eq!(report.isolation.landlock_abi, support.abi);
    // Missing layers are said, never silent; so is a root host's reach.
    let root = nix::unistd::getuid().is_root();
    assert_eq!(
        report.isolation.warnings.is_empty(),
        support.network() && !root,
        "{:?}",
        report.isolation.warnings
    );
}

fn bwrap_missing() -> bool {
    if gatehouse_core::sandbox::linux::bwrap::find().is_ok() {
        return false;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "bwrap is not installed (scripts/setup.sh installs bubblewrap)"
    );
    eprintln!("SKIPPED: bwrap is not installed");
    true
}

#[tokio::test]
async fn bwrap_backend_confines_files_network_and_daemons() {
    if bwrap_missing() {
        return;
    }
    gatehouse_core::sandbox::become_subreaper().unwrap();
    let (tmp, site) = fresh_site("iso_bwrap").await;
    let (_l, port) = listener();
    add_hostile(
        &site,
        "b",
        with_profile(Profile {
            backend: Backend::Bwrap,
            ..Profile::default()
        }),
    )
    .await;
    let toml = attack(
        &site,
        "b",
        "read_file",
        json!({"path": site.dir.join("gatehouse.toml")}),
    )
    .await
    .unwrap();
    assert_eq!(toml["ok"], false, "{toml}");
    let write = attack(
        &site,
        "b",
        "write_file",
        json!({"path": tmp.path().join("planted.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(write["ok"], false, "{write}");
    assert!(!tmp.path().join("planted.txt").exists());
    let net = attack(
        &site,
        "b",
        "connect",
        json!({"host": "127.0.0.1", "port": port}),
    )
    .await
    .unwrap();
    assert_eq!(net["ok"], false, "{net}");
    // In its PID namespace the parent is bwrap's own init, whose environment
    // is the child's (PATH and HOME): nothing of the host's.
    let env = attack(&site, "b", "environ", json!({})).await.unwrap();
    let names: Vec<&str> = env["names"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    assert!(
        env["ok"] == false || names.iter().all(|n| ["PATH", "HOME"].contains(n)),
        "the host's environment reached a bwrap child: {env}"
    );

    // A setsid daemon inside the namespace dies with it. Its pid is the
    // namespace's, so it is found by a tag in its command line.
    let tag = format!("--tag=bwrap-daemon-{}", std::process::id());
    let conn = SavedConnection {
        name: "d".into(),
        spec: python("hostile.py", &[&tag]),
        limits: with_profile(Profile {
            backend: Backend::Bwrap,
            ..Profile::default()
        }),
        created_at: 0,
    };
    saved::add(&site.store, "test", &conn).await.unwrap();
    let out = attack(&site, "d", "daemon", json!({})).await.unwrap();
    assert_eq!(out["ok"], true, "{out}");
    let tagged = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&tag))
                    && alive(*pid as i64)
            })
            .collect()
    };
    let mut left = tagged();
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = tagged();
    }
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        left.is_empty(),
        "bwrap daemon(s) {left:?} outlived the connection"
    );
}

/// A daemon that calls `setsid` leads a scheduler autogroup of its own, where
/// the niceness it inherited ranks it only against itself (an attack run's
/// daemon competed with the window at full weight). The watchdog gives that
/// autogroup the profile's niceness within a few polls.
#[tokio::test]
async fn a_setsid_daemons_own_autogroup_gets_the_profiles_niceness() {
    use gatehouse_core::mcp::client::{CallOptions, ConnectOptions, Connection, MemoryRecorder};
    if std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|s| s.trim() == "0")
    {
        return; // no autogroups: the niceness set at spawn already holds
    }
    let (_tmp, root) = scratch_root();
    let options = ConnectOptions::new(python("hostile.py", &[]), root, MemoryRecorder::new());
    let conn = Connection::connect(options).await.unwrap();
    let out = conn
        .call_tool("daemon", json!({}), CallOptions::default())
        .await;
    let text = out.result.unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let pid = serde_json::from_str::<Value>(&text).unwrap()["pid"]
        .as_i64()
        .unwrap();
    let autogroup =
        || std::fs::read_to_string(format!("/proc/{pid}/autogroup")).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !autogroup().contains(&format!("nice {}", gatehouse_core::sandbox::DEFAULT_NICE)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon's autogroup kept its niceness: {}",
            autogroup()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    conn.close().await;
    assert!(!alive(pid), "the daemon outlived the connection");
}
