//! API keys end to end through the real binary: mint, list, verify, revoke,
//! expire, roll, and the raw key never being stored or logged.

use crate::util::TestSite;

#[test]
fn mint_prints_the_key_once_and_list_never_shows_it() {
    let site = TestSite::new("keys_mint");
    let minted = site.ok_json(&[
        "keys",
        "mint",
        "--label",
        "claude",
        "--roles",
        "editor,viewer",
        "--expires-in",
        "30d",
        "--json",
    ]);
    let key = minted["key"].as_str().unwrap();
    let id = minted["id"].as_str().unwrap();
    assert!(key.starts_with(&format!("gatehouse_sk_{id}_")));
    assert_eq!(minted["roles"], serde_json::json!(["viewer", "editor"]));
    assert!(minted["expires_at"].as_str().unwrap().ends_with('Z'));

    let list = site.ok_json(&["keys", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["label"], "claude");
    assert_eq!(list[0]["status"], "active");
    let text = site.ok(&["keys", "list"]) + &list.to_string();
    assert!(
        !text.contains(key) && !text.contains(&key[key.len() - 20..]),
        "a list showed the secret"
    );
}

#[test]
fn verify_revoke_and_unknown_keys() {
    let site = TestSite::new("keys_revoke");
    let (key, id) = site.mint("author");
    let who = site.ok_json(&["whoami", "--api-key", &key, "--json"]);
    assert_eq!(
        who,
        serde_json::json!({"kind": "api_key", "key_id": id, "roles": ["author"]})
    );
    // last_used is recorded by a verification
    let list = site.ok_json(&["keys", "list", "--json"]);
    assert!(list[0]["last_used_at"].is_string());

    site.ok(&["keys", "revoke", &id]);
    let f = site.fails(&["whoami", "--api-key", &key, "--json"]);
    assert_eq!(f.code, "ACTOR_API_KEY_INVALID");
    assert!(f.stderr.contains("\"reason\":\"revoked\""), "{}", f.stderr);
    assert_eq!(
        site.fails(&["keys", "revoke", &id]).code,
        "KEY_ALREADY_REVOKED"
    );
    assert_eq!(
        site.fails(&["keys", "revoke", "nosuchkey123"]).code,
        "KEY_NOT_FOUND"
    );
    assert_eq!(
        site.ok_json(&["keys", "list", "--json"])[0]["status"],
        "revoked"
    );
}

#[test]
fn a_key_from_another_site_is_unknown_and_a_wrong_secret_too() {
    let a = TestSite::new("keys_other_a");
    let b = TestSite::new("keys_other_b");
    let (key, _) = a.mint("viewer");
    let f = b.fails(&["whoami", "--api-key", &key, "--json"]);
    assert!(f.stderr.contains("\"reason\":\"unknown\""), "{}", f.stderr);

    // Same id, a different (well-formed, correctly checksummed) secret.
    let (other, _) = b.mint("viewer");
    let id = &key["gatehouse_sk_".len().."gatehouse_sk_".len() + 12];
    let other_secret = &other["gatehouse_sk_".len() + 13..other.len() - 6];
    let body = format!("gatehouse_sk_{id}_{other_secret}");
    let forged = format!("{body}{}", gatehouse_core::access::keys::checksum(&body));
    let f = a.fails(&["whoami", "--api-key", &forged, "--json"]);
    assert!(f.stderr.contains("\"reason\":\"unknown\""), "{}", f.stderr);
}

#[test]
fn expired_keys_are_refused() {
    let site = TestSite::new("keys_expire");
    let (key, id) = site.mint("viewer");
    // Roll with no grace: the old key expires now, the new one works.
    let rolled = site.ok_json(&["keys", "roll", &id, "--grace", "0s", "--json"]);
    let f = site.fails(&["whoami", "--api-key", &key, "--json"]);
    assert!(f.stderr.contains("\"reason\":\"expired\""), "{}", f.stderr);
    let who = site.ok_json(&[
        "whoami",
        "--api-key",
        rolled["key"].as_str().unwrap(),
        "--json",
    ]);
    assert_eq!(who["roles"], serde_json::json!(["viewer"]));
    assert_eq!(
        site.fails(&[
            "keys",
            "mint",
            "--label",
            "x",
            "--roles",
            "viewer",
            "--expires-at",
            "2001-01-01T00:00:00Z"
        ])
        .code,
        "EXPIRY_INVALID"
    );
    assert_eq!(
        site.fails(&[
            "keys",
            "mint",
            "--label",
            "x",
            "--roles",
            "viewer",
            "--expires-in",
            "soon"
        ])
        .code,
        "EXPIRY_INVALID"
    );
}

#[test]
fn roll_keeps_label_and_roles_and_the_old_key_works_during_grace() {
    let site = TestSite::new("keys_roll");
    let (old, id) = site.mint("editor");
    let rolled = site.ok_json(&["keys", "roll", &id, "--grace", "24h", "--json"]);
    assert_eq!(rolled["roles"], serde_json::json!(["editor"]));
    assert_eq!(rolled["label"], "test key");
    assert_ne!(rolled["id"], id);
    site.ok(&["whoami", "--api-key", &old, "--json"]);
    let list = site.ok_json(&["keys", "list", "--json"]);
    let old_row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .unwrap();
    assert_eq!(old_row["replaced_by"], rolled["id"]);
    assert!(old_row["expires_at"].is_string());
}

#[test]
fn bad_mint_input_is_refused_and_nothing_is_stored() {
    let site = TestSite::new("keys_bad_input");
    assert_eq!(
        site.fails(&["keys", "mint", "--label", "x", "--roles", "superuser"])
            .code,
        "ROLE_UNKNOWN"
    );
    assert_eq!(
        site.fails(&["keys", "mint", "--label", "", "--roles", "viewer"])
            .code,
        "LABEL_INVALID"
    );
    assert_eq!(
        site.fails(&["keys", "mint", "--label", "x", "--roles", ""])
            .code,
        "ROLES_EMPTY"
    );
    assert_eq!(
        site.ok_json(&["keys", "list", "--json"]),
        serde_json::json!([])
    );
}

#[test]
fn the_raw_key_never_reaches_the_database_logs_or_audit_log() {
    let site = TestSite::new("keys_no_secret");
    let out = site
        .command()
        .args(["keys", "mint", "--label", "x", "--roles", "admin", "--json"])
        .env("GATEHOUSE_LOG", "trace")
        .output()
        .unwrap();
    assert!(out.status.success());
    let minted: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = minted["key"].as_str().unwrap().to_string();
    let secret = &key["gatehouse_sk_".len() + 13..];
    let mut logs = String::from_utf8_lossy(&out.stderr).into_owned();
    for args in [
        vec!["whoami", "--json"],
        vec!["keys", "list", "--json"],
        vec!["audit", "list", "--json"],
    ] {
        let out = site
            .command()
            .args(&args)
            .env("GATEHOUSE_API_KEY", &key)
            .env("GATEHOUSE_LOG", "trace")
            .output()
            .unwrap();
        logs.push_str(&String::from_utf8_lossy(&out.stderr));
        logs.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    assert!(
        logs.contains("key_id") || logs.contains("TRACE") || logs.contains("DEBUG"),
        "trace logging was not on"
    );
    assert!(!logs.contains(secret), "a log or output held the secret");
    // A failing verification with the key in argv must not echo it either.
    site.ok(&["keys", "revoke", minted["id"].as_str().unwrap()]);
    let f = site.fails(&["whoami", "--api-key", &key]);
    assert!(!f.stderr.contains(secret));

    match site.db_file() {
        Some(db) => {
            // Every byte of the database, including the WAL and SHM files.
            let mut bytes = Vec::new();
            for suffix in ["", "-wal", "-shm"] {
                if let Ok(b) = std::fs::read(format!("{}{suffix}", db.display())) {
                    bytes.extend(b);
                }
            }
            assert!(bytes.len() > 4096);
            let needle = secret.as_bytes();
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "the secret is in the database file"
            );
            let hash = site.sql("SELECT hash FROM api_keys");
            assert!(
                hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
                "{hash}"
            );
        }
        None => {
            let dump = site.sql("SELECT string_agg(t::text, '|') FROM (SELECT * FROM api_keys) t")
                + &site.sql("SELECT string_agg(t::text, '|') FROM (SELECT * FROM audit_log) t");
            assert!(!dump.contains(secret));
        }
    }
}
