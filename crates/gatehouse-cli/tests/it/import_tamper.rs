//! `site import` refuses an export whose security data was edited: a key's
//! roles raised, a revocation cleared, a user's roles changed. The audit log
//! in the export says what happened to every key and user; the current state
//! must match it. The chain itself stays valid in these attacks, so only the
//! replay can tell.

use serde_json::Value;

use crate::util::TestSite;

/// Exports a populated site and returns the dump (with the minted key ids).
fn exported(name: &str) -> (TestSite, Value, String, String) {
    let src = TestSite::new(name);
    let (_, viewer) = src.mint("viewer");
    let (_, revoked) = src.mint("editor");
    src.ok(&["keys", "revoke", &revoked]);
    src.ok(&[
        "users",
        "create",
        "--email",
        "Moved@Example.com",
        "--roles",
        "author",
    ]);
    src.ok(&[
        "users",
        "update",
        "--email",
        "moved@example.com",
        "--roles",
        "viewer",
    ]);
    let file = src.dir.parent().unwrap().join("dump.json");
    src.ok(&["site", "export", "--out", file.to_str().unwrap()]);
    let dump = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (src, dump, viewer, revoked)
}

/// Imports `dump` into a fresh site; returns the failure's code and stderr.
fn import(name: &str, dump: &Value) -> Result<(), (String, String)> {
    let dst = TestSite::plain(name);
    let file = dst.dir.parent().unwrap().join("edited.json");
    std::fs::write(&file, dump.to_string()).unwrap();
    let out = dst.run(&["site", "import", file.to_str().unwrap()]);
    if out.status.success() {
        return Ok(());
    }
    let f = crate::util::failure(out, &["site", "import"]);
    Err((f.code, f.stderr))
}

fn key<'a>(dump: &'a mut Value, id: &str) -> &'a mut Value {
    dump["keys"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|k| k["id"] == id)
        .unwrap()
}

#[test]
fn an_untouched_export_imports() {
    let (_src, dump, _, _) = exported("tamper_none");
    import("tamper_none_dst", &dump).unwrap();
}

#[test]
fn an_export_with_a_key_raised_to_admin_is_refused() {
    let (_src, mut dump, viewer, _) = exported("tamper_key_roles");
    key(&mut dump, &viewer)["roles"] = "admin".into();
    let (code, message) = import("tamper_key_roles_dst", &dump).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(
        message.contains(&viewer) && message.contains("roles"),
        "{message}"
    );
}

#[test]
fn an_export_with_a_revocation_cleared_is_refused() {
    let (_src, mut dump, _, revoked) = exported("tamper_revoked");
    key(&mut dump, &revoked)["revoked_at"] = Value::Null;
    let (code, message) = import("tamper_revoked_dst", &dump).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(
        message.contains(&revoked) && message.contains("revoked"),
        "{message}"
    );
}

#[test]
fn an_export_with_a_user_role_changed_is_refused() {
    let (_src, mut dump, _, _) = exported("tamper_user");
    for u in dump["users"].as_array_mut().unwrap() {
        if u["email"] == "Moved@Example.com" {
            u["roles"] = "admin".into();
        }
    }
    let (code, message) = import("tamper_user_dst", &dump).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(message.contains("moved@example.com"), "{message}");
}

#[test]
fn an_export_with_an_unaudited_key_added_is_refused() {
    let (_src, mut dump, viewer, _) = exported("tamper_extra_key");
    let mut extra = key(&mut dump, &viewer).clone();
    extra["id"] = "gh_fakefakefake".into();
    dump["keys"].as_array_mut().unwrap().push(extra);
    let (code, message) = import("tamper_extra_key_dst", &dump).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(message.contains("gh_fakefakefake"), "{message}");
}
