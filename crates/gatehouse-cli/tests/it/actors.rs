//! Every actor path and every refusal code, through the real binary.

use crate::util;

use crate::util::{TestSite, failure};

#[test]
fn no_flags_is_public() {
    let site = TestSite::new("actor_public");
    assert_eq!(
        site.ok_json(&["whoami", "--json"]),
        serde_json::json!({"kind": "public", "roles": ["public"]})
    );
}

#[test]
fn email_resolves_case_insensitively_with_store_roles() {
    let site = TestSite::new("actor_email");
    site.ok(&[
        "users",
        "create",
        "--email",
        "Ada@Example.org",
        "--roles",
        "author,viewer",
    ]);
    let who = site.ok_json(&["whoami", "--email", "ada@example.ORG", "--json"]);
    assert_eq!(
        who,
        serde_json::json!({"kind": "user", "email": "Ada@Example.org", "roles": ["viewer", "author"]})
    );
    assert_eq!(
        site.fails(&[
            "users",
            "create",
            "--email",
            "ADA@example.org",
            "--roles",
            "viewer"
        ])
        .code,
        "USER_EXISTS"
    );
    site.ok(&[
        "users",
        "update",
        "--email",
        "ada@example.org",
        "--roles",
        "editor",
    ]);
    assert_eq!(
        site.ok_json(&["whoami", "--email", "ada@example.org", "--json"])["roles"],
        serde_json::json!(["editor"])
    );
}

#[test]
fn unknown_email_refuses_with_a_hint() {
    let site = TestSite::new("actor_email_unknown");
    let f = site.fails(&["whoami", "--email", "ghost@example.com"]);
    assert_eq!(f.code, "ACTOR_EMAIL_UNKNOWN");
    assert!(f.stderr.contains("gatehouse users create"), "{}", f.stderr);
    assert_eq!(
        site.fails(&[
            "users",
            "create",
            "--email",
            "not-an-email",
            "--roles",
            "viewer"
        ])
        .code,
        "EMAIL_INVALID"
    );
}

#[test]
fn role_is_for_scratch_sites_only() {
    let scratch = TestSite::new("actor_role_scratch");
    assert_eq!(
        scratch.ok_json(&["whoami", "--role", "editor,viewer", "--json"]),
        serde_json::json!({"kind": "synthetic", "roles": ["viewer", "editor"]})
    );
    assert_eq!(
        scratch.fails(&["whoami", "--role", "root"]).code,
        "ROLE_UNKNOWN"
    );
    let plain = TestSite::plain("actor_role_plain");
    assert_eq!(
        plain.fails(&["whoami", "--role", "editor"]).code,
        "ACTOR_ROLE_NOT_SCRATCH"
    );
}

#[test]
fn api_key_from_flag_or_environment() {
    let site = TestSite::new("actor_key_env");
    let (key, id) = site.mint("viewer");
    let out = site
        .command()
        .args(["whoami", "--json"])
        .env("GATEHOUSE_API_KEY", &key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let who: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(who["kind"], "api_key");
    assert_eq!(who["key_id"], id);
}

/// `--key-id`: the key's actor without its secret (what the desktop's actor
/// preview runs for a key it did not mint), checked as every call is:
/// unknown, revoked and expired keys are refused; it is one actor source
/// among the others, and no client config is made from it.
#[test]
fn key_id_runs_as_the_key_and_is_refused_once_revoked() {
    let site = TestSite::new("actor_key_id");
    let (key, id) = site.mint("viewer");
    let who = site.ok_json(&["whoami", "--key-id", &id, "--json"]);
    assert_eq!(who["kind"], "api_key", "{who}");
    assert_eq!(who["key_id"], id);
    assert_eq!(who["roles"], serde_json::json!(["viewer"]));
    let unknown = site.fails(&["whoami", "--key-id", "k_doesnotexist"]);
    assert_eq!(unknown.code, "ACTOR_API_KEY_INVALID", "{}", unknown.stderr);
    assert_eq!(
        site.fails(&["whoami", "--key-id", &id, "--api-key", &key])
            .code,
        "ACTOR_FLAGS_CONFLICT"
    );
    let config = site.fails(&["config", "--client", "claude-desktop", "--key-id", &id]);
    assert_eq!(config.code, "INPUT_INVALID", "{}", config.stderr);
    site.ok(&["keys", "revoke", &id]);
    let revoked = site.fails(&["whoami", "--key-id", &id]);
    assert_eq!(revoked.code, "ACTOR_API_KEY_INVALID", "{}", revoked.stderr);
    assert!(revoked.stderr.contains("revoked"), "{}", revoked.stderr);
}

#[test]
fn malformed_keys_refuse_and_never_fall_back_to_public() {
    let site = TestSite::new("actor_key_malformed");
    let (key, _) = site.mint("viewer");
    let mut typo = key.clone();
    typo.replace_range(20..21, if &key[20..21] == "a" { "b" } else { "a" });
    for bad in ["", "nonsense", "gatehouse_sk_", typo.as_str()] {
        let out = site
            .command()
            .args(["whoami", "--json"])
            .env("GATEHOUSE_API_KEY", bad)
            .output()
            .unwrap();
        let f = failure(out, &["whoami"]);
        assert_eq!(f.code, "ACTOR_API_KEY_INVALID", "for {bad:?}");
        assert!(
            f.stderr.contains("\"reason\":\"malformed\""),
            "{}",
            f.stderr
        );
    }
}

#[test]
fn two_actor_sources_conflict() {
    let site = TestSite::new("actor_conflict");
    let (key, _) = site.mint("viewer");
    assert_eq!(
        site.fails(&["whoami", "--email", "admin@example.com", "--role", "viewer"])
            .code,
        "ACTOR_FLAGS_CONFLICT"
    );
    assert_eq!(
        site.fails(&["whoami", "--role", "viewer", "--api-key", &key])
            .code,
        "ACTOR_FLAGS_CONFLICT"
    );
    let out = site
        .command()
        .args(["whoami", "--email", "admin@example.com"])
        .env("GATEHOUSE_API_KEY", &key)
        .output()
        .unwrap();
    assert_eq!(failure(out, &["whoami"]).code, "ACTOR_FLAGS_CONFLICT");
}

#[test]
fn a_folder_without_a_site_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(util::BIN)
        .args(["--site"])
        .arg(tmp.path())
        .args(["keys", "list"])
        .output()
        .unwrap();
    let f = failure(out, &["keys", "list"]);
    assert_eq!(f.code, "SITE_NOT_FOUND");
    assert!(f.stderr.contains("gatehouse site init"));
    let site = TestSite::new("site_twice");
    let out = std::process::Command::new(util::BIN)
        .args(["site", "init"])
        .arg(site.path())
        .output()
        .unwrap();
    assert_eq!(failure(out, &["site", "init"]).code, "SITE_EXISTS");
}
