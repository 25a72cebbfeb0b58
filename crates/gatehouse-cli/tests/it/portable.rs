//! `gatehouse site export` / `site import`: a site moved between SQLite and
//! PostgreSQL keeps working — keys minted before the move still verify, the
//! audit chain verifies, search, redirects and media work — and exporting the
//! imported site gives the same dump. Cross-backend cases run when
//! `GATEHOUSE_TEST_PG_URL` is set; SQLite → SQLite always runs.

use crate::util;

use crate::util::TestSite;
use gatehouse_core::access::actor::Actor;
use gatehouse_core::site::{self, Settings};
use gatehouse_test_pg::{base_url_or_skip, fresh_database};

/// A populated source site: the scratch sample data, a redirect, an active and
/// a revoked key, an extra user, an MCP connection definition. Returns the active raw key and the revoked one.
fn populate(site: &TestSite) -> (String, String) {
    site.sql(
        "INSERT INTO content_redirects (old_slug, content_id, created_at)
         SELECT 'hello', id, 1700000000000 FROM content WHERE slug = 'welcome'",
    );
    site.sql(
        "INSERT INTO mcp_connections (name, spec, limits, created_at, updated_at)
         VALUES ('fixture', '{\"program\":\"python3\"}', '{}', 1700000000000, 1700000000000)",
    );
    let (active, _) = site.mint("editor");
    let (revoked, revoked_id) = site.mint("viewer");
    site.ok(&["keys", "revoke", &revoked_id]);
    site.ok(&[
        "users",
        "create",
        "--email",
        "Moved@Example.com",
        "--roles",
        "author",
    ]);
    // Use the key once, so last_used_at is set and must survive the move.
    site.ok(&["whoami", "--api-key", &active, "--json"]);
    (active, revoked)
}

fn export(site: &TestSite, file: &std::path::Path) -> serde_json::Value {
    site.ok(&["site", "export", "--out", file.to_str().unwrap()]);
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// The parts of a dump that must be identical after a move.
fn data(mut dump: serde_json::Value) -> serde_json::Value {
    let o = dump.as_object_mut().unwrap();
    o.remove("exported_at");
    o.remove("site_name");
    // Each machine signs with its own key.
    o.remove("signature");
    dump
}

/// Published entries matching `text`, as the public sees them (real search).
fn search(site: &TestSite, text: &str) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let settings = Settings {
            dir: site.dir.clone(),
            database_url: None,
        };
        let s = site::open(&settings).await.unwrap();
        let public = Actor::Public;
        let hits = gatehouse_core::site::content::search(&s.store, &public, text, 10)
            .await
            .unwrap();
        s.store.close().await;
        hits.into_iter().map(|e| e.slug).collect()
    })
}

fn round_trip(name: &str, from: Option<String>, to: Option<String>) {
    let src = TestSite::with_database(&format!("{name}_src"), true, from);
    let (active, revoked) = populate(&src);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.json");
    let dumped = export(&src, &file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(&active) && !text.contains(&active[active.len() - 20..]),
        "the export holds a raw key"
    );
    assert!(!text.contains(&revoked[revoked.len() - 20..]));

    // Another machine's site (its own audit key): it trusts the source's.
    let dst = TestSite::with_database(&format!("{name}_dst"), false, to);
    let src_key = src.ok(&["audit", "key"]).trim().to_string();
    let out = dst.ok(&[
        "site",
        "import",
        file.to_str().unwrap(),
        "--trust-key",
        &src_key,
    ]);
    assert!(
        out.contains("imported 5 users, 2 keys, 3 entries, 1 redirects, 1 media, 3 config values, 1 MCP connections"),
        "{out}"
    );

    // Keys minted on the source verify on the target; the revoked one stays revoked.
    let who = dst.ok_json(&["whoami", "--api-key", &active, "--json"]);
    assert_eq!(who["kind"], "api_key");
    assert_eq!(who["roles"], serde_json::json!(["editor"]));
    let f = dst.fails(&["whoami", "--api-key", &revoked, "--json"]);
    assert!(f.stderr.contains("\"reason\":\"revoked\""), "{}", f.stderr);

    // The chain was carried over exactly and verifies.
    assert_eq!(
        dst.ok_json(&["audit", "list", "--json"]),
        src.ok_json(&["audit", "list", "--json"])
    );
    let verified = dst.ok(&["audit", "verify"]);
    assert!(verified.contains("ok"), "{verified}");
    assert!(
        verified.contains("entries 1–5 came in by an import on")
            && verified.contains("trusted with --trust-key"),
        "{verified}"
    );
    let imported = &dst.ok_json(&["audit", "verify", "--json"])["imported"][0];
    assert_eq!(imported["upto_seq"], 5, "{imported}");
    assert_eq!(imported["trust"], "trusted_key", "{imported}");
    assert_eq!(imported["signed_by"], src_key.as_str(), "{imported}");
    assert_eq!(
        dst.ok_json(&["users", "list", "--json"]),
        src.ok_json(&["users", "list", "--json"])
    );

    // Search (a different index on each backend), redirects and media bytes.
    assert_eq!(search(&dst, "anonymous readers"), ["welcome"]);
    assert_eq!(
        search(&dst, "anonymous readers"),
        search(&src, "anonymous readers")
    );
    assert!(
        search(&dst, "Unpublished plans").is_empty(),
        "drafts stay hidden"
    );
    assert_eq!(
        dst.sql("SELECT c.slug FROM content_redirects r JOIN content c ON c.id = r.content_id WHERE r.old_slug = 'hello'"),
        "welcome"
    );

    // Exporting the imported site gives the same data (whoami above touched
    // last_used_at at most once a minute, so it is unchanged), media included,
    // and says what its history was taken on.
    let mut again = export(&dst, &tmp.path().join("again.json"));
    let carried = again.as_object_mut().unwrap().remove("imports");
    assert_eq!(carried.unwrap()[0]["trust"], "trusted_key");
    assert_eq!(data(again), data(dumped.clone()));
    assert_eq!(dumped["media"][0]["filename"], "pixel.png");

    // Both sites go on independently: a new mint on the target chains on.
    dst.mint("viewer");
    assert!(dst.ok(&["audit", "verify"]).contains("ok"));
}

#[test]
fn sqlite_to_sqlite() {
    round_trip("port_ss", None, None);
}

#[test]
fn sqlite_to_postgres() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    round_trip("port_sp", None, Some(fresh_database(&base, "port_sp").0));
}

#[test]
fn postgres_to_sqlite() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    round_trip("port_ps", Some(fresh_database(&base, "port_ps").0), None);
}

#[test]
fn import_refuses_a_site_that_is_not_empty() {
    let src = TestSite::new("port_full_src");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.json");
    export(&src, &file);
    // A scratch target already holds sample data.
    let dst = TestSite::new("port_full_dst");
    let before = dst.ok(&["audit", "list", "--json"]);
    let src_key = src.ok(&["audit", "key"]).trim().to_string();
    let f = dst.fails(&[
        "site",
        "import",
        file.to_str().unwrap(),
        "--trust-key",
        &src_key,
    ]);
    assert_eq!(f.code, "IMPORT_TARGET_NOT_EMPTY", "{}", f.stderr);
    assert!(f.stderr.contains("hint: "), "{}", f.stderr);
    assert_eq!(dst.ok(&["audit", "list", "--json"]), before);
}

/// The import appends nothing to the log (export → import → export is the
/// same file), so without a record of its own nothing on the site told that
/// its history was taken on the importer's word alone: after this machine's
/// first checkpoint, verify vouched for an unsigned dump's entries as for its
/// own. The record says what each import was taken on, for good.
#[test]
fn verify_says_what_an_imported_history_was_taken_on() {
    let src = TestSite::new("port_provenance_src");
    populate(&src);
    let tmp = tempfile::tempdir().unwrap();
    let mut dump = export(&src, &tmp.path().join("site.json"));
    let imported =
        |dst: &TestSite| dst.ok_json(&["audit", "verify", "--json"])["imported"][0].clone();

    // Unsigned, on the importer's word.
    dump.as_object_mut().unwrap().remove("signature");
    let unsigned = tmp.path().join("unsigned.json");
    std::fs::write(&unsigned, dump.to_string()).unwrap();
    let dst = TestSite::plain("port_provenance_unsigned");
    dst.ok(&["site", "import", unsigned.to_str().unwrap(), "--unsigned"]);
    let first = imported(&dst);
    assert_eq!(first["trust"], "unsigned", "{first}");
    assert_eq!(first["upto_seq"], 5, "{first}");
    assert!(first.get("signed_by").is_none(), "{first}");
    dst.mint("viewer");
    let text = dst.ok(&["audit", "verify"]);
    assert!(
        text.contains("matching the signed checkpoint at entry 6"),
        "{text}"
    );
    assert!(
        text.contains("entries 1–5 came in by an import on"),
        "{text}"
    );
    assert!(
        text.contains("taken on the importer's word (--unsigned)"),
        "{text}"
    );
    assert_eq!(imported(&dst), first, "a later write keeps the record");

    // Signed by this machine's key (the source's, copied over).
    let dst = TestSite::plain("port_provenance_own");
    std::fs::create_dir_all(dst.config_dir()).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(
        dst.config_dir(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    std::fs::copy(
        src.config_dir().join("audit-signing-key"),
        dst.config_dir().join("audit-signing-key"),
    )
    .unwrap();
    dst.ok(&[
        "site",
        "import",
        tmp.path().join("site.json").to_str().unwrap(),
    ]);
    let own = imported(&dst);
    assert_eq!(own["trust"], "this_machine", "{own}");
    assert_eq!(own["signed_by"], src.ok(&["audit", "key"]).trim(), "{own}");

    // A site that was never imported has no record.
    assert!(imported(&src).is_null());
}

/// A site made from an unsigned dump, exported again: its export is signed
/// by its machine, and an import of that export reported the whole history
/// as taken on that signature. The export carries what its history was taken
/// on, under the signature, and the next site reports both imports.
#[test]
fn a_re_export_carries_what_an_imported_history_was_taken_on() {
    let src = TestSite::new("port_launder_src");
    populate(&src);
    let tmp = tempfile::tempdir().unwrap();
    let mut dump = export(&src, &tmp.path().join("site.json"));
    dump.as_object_mut().unwrap().remove("signature");
    let unsigned = tmp.path().join("unsigned.json");
    std::fs::write(&unsigned, dump.to_string()).unwrap();
    let mid = TestSite::plain("port_launder_mid");
    mid.ok(&["site", "import", unsigned.to_str().unwrap(), "--unsigned"]);
    let again = export(&mid, &tmp.path().join("again.json"));
    assert_eq!(
        again["imports"][0]["trust"], "unsigned",
        "{}",
        again["imports"]
    );
    let mid_key = mid.ok(&["audit", "key"]);
    let dst = TestSite::plain("port_launder_dst");
    dst.ok(&[
        "site",
        "import",
        tmp.path().join("again.json").to_str().unwrap(),
        "--trust-key",
        mid_key.trim(),
    ]);
    let imported = dst.ok_json(&["audit", "verify", "--json"])["imported"].clone();
    let trusts: Vec<&str> = imported
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["trust"].as_str().unwrap())
        .collect();
    assert_eq!(trusts, ["unsigned", "trusted_key"], "{imported}");
    let text = dst.ok(&["audit", "verify"]);
    assert!(
        text.contains("taken on the importer's word (--unsigned)"),
        "{text}"
    );

    // The record cannot be edited out of the export: the signature covers it.
    let mut stripped = again.clone();
    stripped.as_object_mut().unwrap().remove("imports");
    let file = tmp.path().join("stripped.json");
    std::fs::write(&file, stripped.to_string()).unwrap();
    let other = TestSite::plain("port_launder_stripped");
    let f = other.fails(&[
        "site",
        "import",
        file.to_str().unwrap(),
        "--trust-key",
        mid_key.trim(),
    ]);
    assert_eq!(f.code, "IMPORT_TAMPERED", "{}", f.stderr);
    // A record outside the log is refused.
    let (_, f) = import_edited("port_launder_bad", &again, |d| {
        d["imports"][0]["upto_seq"] = 9999.into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
}

/// What a site holds beside its rows had been lost on a move: a secret
/// mark (the value then readable to every editor), display names, edits
/// waiting to be published, and the connections' approved tool lists (each
/// server's next connect pinned whatever it offered). All of it moves now,
/// and a secret mark the log records survives an export that lacks it.
#[test]
fn a_move_keeps_secret_marks_display_names_pending_edits_and_tool_pins() {
    use crate::mcp_util::McpSite;
    use serde_json::json;
    let src = TestSite::new("port_whole_src");
    src.ok(&[
        "site",
        "config",
        "set",
        "--secret",
        "stripe.key",
        "sk-abc-123",
    ]);
    src.ok(&[
        "users",
        "update",
        "--email",
        "author@example.com",
        "--display-name",
        "Ann Author",
    ]);
    let mut m = src.mcp(&["--email", "editor@example.com"], &[]);
    m.initialize("2025-06-18");
    let r = m.call(
        1,
        "content_write_draft",
        json!({"slug": "welcome", "title": "Welcome", "body": "PENDING EDIT"}),
        None,
    );
    assert_ne!(r["result"]["isError"], true, "{r}");
    drop(m);
    // A pin needs a server to connect to (a Python fixture: not under Wine).
    let pinned = cfg!(unix).then(|| {
        src.ok(&[
            "connections",
            "add",
            "pin",
            "--",
            "python3",
            &util::fixture("pin_server.py"),
        ]);
        src.ok(&["probe", "pin"]);
        let pinned = src.ok_json(&["connections", "show", "pin", "--json"])["pin"].clone();
        assert!(!pinned.is_null(), "probe pinned the list");
        pinned
    });

    let tmp = tempfile::tempdir().unwrap();
    let dump = export(&src, &tmp.path().join("site.json"));
    let src_key = src.ok(&["audit", "key"]);
    let check = |dst: &TestSite| {
        let config = dst.ok_json(&["site", "config", "list", "--json"]);
        let stripe = config
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == "stripe.key")
            .cloned()
            .unwrap();
        assert_eq!(stripe["secret"], true, "{stripe}");
        assert_eq!(
            dst.sql("SELECT display_name FROM users WHERE email = 'author@example.com'"),
            "Ann Author"
        );
        let mut m = dst.mcp(&["--email", "editor@example.com"], &[]);
        m.initialize("2025-06-18");
        let read = m.call(1, "content_read", json!({"slug": "welcome"}), None);
        assert_eq!(
            read["result"]["structuredContent"]["pending_revision"]["body"], "PENDING EDIT",
            "{read}"
        );
        if let Some(pinned) = &pinned {
            let pin = dst.ok_json(&["connections", "show", "pin", "--json"])["pin"].clone();
            assert_eq!(&pin, pinned);
        }
    };
    let dst = TestSite::plain("port_whole_dst");
    dst.ok(&[
        "site",
        "import",
        tmp.path().join("site.json").to_str().unwrap(),
        "--trust-key",
        src_key.trim(),
    ]);
    check(&dst);

    // An export without the mark (an older Gatehouse's): the log's word stands.
    let mut older = dump.clone();
    for c in older["config"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("secret");
    }
    older.as_object_mut().unwrap().remove("signature");
    let file = tmp.path().join("older.json");
    std::fs::write(&file, older.to_string()).unwrap();
    let dst = TestSite::plain("port_whole_older");
    dst.ok(&["site", "import", file.to_str().unwrap(), "--unsigned"]);
    let config = dst.ok_json(&["site", "config", "list", "--json"]);
    assert!(
        config
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["key"] == "stripe.key" && c["secret"] == true),
        "{config}"
    );
}

/// Writes `dump` changed by `edit` and imports it into a fresh empty site,
/// unsigned (an edit breaks the signature, which import_tamper.rs pins; these
/// are the checks of the contents).
fn import_edited(
    name: &str,
    dump: &serde_json::Value,
    edit: impl FnOnce(&mut serde_json::Value),
) -> (TestSite, util::Failure) {
    let mut changed = dump.clone();
    changed.as_object_mut().unwrap().remove("signature");
    edit(&mut changed);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("edited.json");
    std::fs::write(&file, changed.to_string()).unwrap();
    let dst = TestSite::plain(name);
    let f = dst.fails(&["site", "import", file.to_str().unwrap(), "--unsigned"]);
    (dst, f)
}

#[test]
fn import_refuses_damaged_or_foreign_exports_and_writes_nothing() {
    let src = TestSite::new("port_bad_src");
    populate(&src);
    let tmp = tempfile::tempdir().unwrap();
    let dump = export(&src, &tmp.path().join("site.json"));

    let (_, f) = import_edited("port_bad_ver", &dump, |d| d["version"] = 99.into());
    assert_eq!(f.code, "IMPORT_VERSION_UNSUPPORTED", "{}", f.stderr);
    let (_, f) = import_edited("port_bad_fmt", &dump, |d| d["format"] = "other".into());
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
    let (_, f) = import_edited("port_bad_field", &dump, |d| {
        d["users"][0]["extra"] = 1.into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
    let (_, f) = import_edited("port_bad_media", &dump, |d| {
        d["media"][0]["bytes_base64"] = "AAAA".into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
    assert!(f.stderr.contains("SHA-256"), "{}", f.stderr);
    let (_, f) = import_edited("port_bad_audit", &dump, |d| {
        d["audit"]["entries"][1]["actor"] = "someone else".into()
    });
    assert_eq!(f.code, "AUDIT_CHAIN_BROKEN", "{}", f.stderr);
    assert!(f.stderr.contains("entry 2"), "{}", f.stderr);
    let (_, f) = import_edited("port_bad_key", &dump, |d| {
        d["keys"][0]["hash"] = "plaintext".into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);

    // A slug no write could make (a key's content scope assumes lowercase
    // slugs: `BLOG-plan` listed for a `blog-*` key that could not read it).
    let (_, f) = import_edited("port_bad_slug", &dump, |d| {
        d["content"][0]["slug"] = "BLOG-plan".into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
    assert!(f.stderr.contains("BLOG-plan"), "{}", f.stderr);
    let (_, f) = import_edited("port_bad_redirect", &dump, |d| {
        d["redirects"][0]["old_slug"] = "Old Post".into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);

    // A failure after rows were written (a redirect to no entry is found only
    // while writing) rolls everything back: the target is still empty.
    let (dst, f) = import_edited("port_bad_late", &dump, |d| {
        d["redirects"][0]["slug"] = "no-such-entry".into()
    });
    assert_eq!(f.code, "IMPORT_INVALID", "{}", f.stderr);
    assert_eq!(
        dst.ok_json(&["users", "list", "--json"]),
        serde_json::json!([])
    );
    assert_eq!(
        dst.ok_json(&["keys", "list", "--json"]),
        serde_json::json!([])
    );
    assert!(dst.ok(&["audit", "verify"]).contains("0 entries"));

    let f = TestSite::plain("port_bad_json").fails(&["site", "import", "/nonexistent/x.json"]);
    assert_eq!(f.code, "IO_ERROR");
}
