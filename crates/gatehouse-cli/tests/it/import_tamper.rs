//! `site import` refuses an export whose security data was edited: a key's
//! roles raised, a revocation cleared, a user's roles changed. The audit log
//! in the export says what happened to every key and user; the current state
//! must match it. The chain itself stays valid in these attacks, so only the
//! replay can tell. An attacker who also rewrites the log and recomputes the
//! chain fools the replay: the export's signature catches that (the tests
//! at the end).

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

/// Imports `dump` into a fresh site (another machine's: its own audit key),
/// trusting `flags` (`--trust-key KEY`, `--unsigned`); returns the failure's
/// code and stderr.
fn import_with(name: &str, dump: &Value, flags: &[&str]) -> Result<(), (String, String)> {
    let dst = TestSite::plain(name);
    let file = dst.dir.parent().unwrap().join("edited.json");
    std::fs::write(&file, dump.to_string()).unwrap();
    let mut args = vec!["site", "import", file.to_str().unwrap()];
    args.extend_from_slice(flags);
    let out = dst.run(&args);
    if out.status.success() {
        return Ok(());
    }
    let f = crate::util::failure(out, &["site", "import"]);
    Err((f.code, f.stderr))
}

/// [`import_with`] trusting the key that signed the export: these tests
/// are about the contents; whose key is trusted is pinned at the end.
fn import(name: &str, dump: &Value) -> Result<(), (String, String)> {
    let signer = dump["signature"]["public_key"]
        .as_str()
        .unwrap()
        .to_string();
    import_with(name, dump, &["--trust-key", &signer])
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

/// Raises a key to admin the way an attacker with the file would: the key's
/// roles and its `key.mint` entry both, then every hash after it recomputed,
/// so the chain verifies and the replay agrees.
fn forge_admin(dump: &mut Value, id: &str) {
    key(dump, id)["roles"] = "admin".into();
    let entries = dump["audit"]["entries"].as_array_mut().unwrap();
    let mut prev = String::new();
    for (i, e) in entries.iter_mut().enumerate() {
        if e["action"] == "key.mint" && e["subject"] == id {
            let mut detail: Value = serde_json::from_str(e["detail"].as_str().unwrap()).unwrap();
            detail["roles"] = "admin".into();
            e["detail"] = detail.to_string().into();
        }
        if i > 0 {
            e["prev_hash"] = prev.clone().into();
        }
        let hash = gatehouse_core::store::audit::entry_hash(
            e["seq"].as_i64().unwrap(),
            e["ts"].as_i64().unwrap(),
            e["actor"].as_str().unwrap(),
            e["action"].as_str().unwrap(),
            e["subject"].as_str().unwrap(),
            e["detail"].as_str().unwrap(),
            e["prev_hash"].as_str().unwrap(),
        );
        e["hash"] = hash.clone().into();
        prev = hash;
    }
    dump["audit"]["head_hash"] = prev.into();
}

fn unsigned(dump: &Value) -> Value {
    let mut d = dump.clone();
    d.as_object_mut().unwrap().remove("signature");
    d
}

/// The forged export passes every content check (the control: imported
/// unsigned, the viewer key arrives as admin), but not its signature.
#[test]
fn an_export_rewritten_with_its_chain_recomputed_is_refused_by_its_signature() {
    let (_src, mut dump, viewer, _) = exported("tamper_rechained");
    forge_admin(&mut dump, &viewer);
    import_with("tamper_rechained_ctl", &unsigned(&dump), &["--unsigned"])
        .expect("the content checks alone are fooled");
    let (code, message) = import("tamper_rechained_dst", &dump).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(message.contains("does not match its content"), "{message}");
}

/// Re-signed by the forger's own machine (imported there unsigned, then
/// exported), the forged export verifies, but under a key the target does
/// not trust; naming that key is the admin's explicit choice.
#[test]
fn an_export_signed_by_an_untrusted_key_is_refused_until_that_key_is_trusted() {
    let (src, mut dump, viewer, _) = exported("tamper_resigned");
    let src_key = src.ok(&["audit", "key"]).trim().to_string();
    assert_eq!(dump["signature"]["public_key"], src_key.as_str());
    forge_admin(&mut dump, &viewer);
    let forger = TestSite::plain("tamper_resigned_forger");
    let file = forger.dir.parent().unwrap().join("forged.json");
    std::fs::write(&file, unsigned(&dump).to_string()).unwrap();
    forger.ok(&["site", "import", file.to_str().unwrap(), "--unsigned"]);
    let resigned_file = forger.dir.parent().unwrap().join("resigned.json");
    forger.ok(&["site", "export", "--out", resigned_file.to_str().unwrap()]);
    let resigned: Value =
        serde_json::from_str(&std::fs::read_to_string(&resigned_file).unwrap()).unwrap();
    let forger_key = forger.ok(&["audit", "key"]).trim().to_string();

    let (code, message) =
        import_with("tamper_resigned_dst", &resigned, &["--trust-key", &src_key]).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(
        message.contains(&forger_key) && message.contains("does not trust"),
        "{message}"
    );
    import_with(
        "tamper_resigned_ok",
        &resigned,
        &["--trust-key", &forger_key],
    )
    .expect("a key named with --trust-key is trusted");
}

/// An export without a signature is refused unless the admin says it is
/// their own (`--unsigned`).
#[test]
fn an_unsigned_export_is_refused_unless_allowed() {
    let (_src, dump, _, _) = exported("tamper_unsigned");
    let (code, message) = import_with("tamper_unsigned_dst", &unsigned(&dump), &[]).unwrap_err();
    assert_eq!(code, "IMPORT_TAMPERED");
    assert!(message.contains("not signed"), "{message}");
    import_with("tamper_unsigned_ok", &unsigned(&dump), &["--unsigned"]).unwrap();
}
