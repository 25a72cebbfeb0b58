//! Audit chain tamper detection on the real database: edit, delete and swap
//! rows, then `audit verify` must fail at the right entry.

use crate::util::{TestSite, site_with_history};

fn broken_at(site: &TestSite) -> i64 {
    let f = site.fails(&["audit", "verify", "--json"]);
    assert_eq!(f.code, "AUDIT_CHAIN_BROKEN");
    let v: serde_json::Value = serde_json::from_str(f.stderr.lines().last().unwrap()).unwrap();
    v["error"]["detail"]["first_bad_seq"].as_i64().unwrap()
}

#[test]
fn an_edited_entry_is_named() {
    let site = site_with_history("audit_edit");
    site.sql("UPDATE audit_log SET subject = 'someone-else' WHERE seq = 3");
    assert_eq!(broken_at(&site), 3);
}

#[test]
fn a_deleted_entry_is_named() {
    let site = site_with_history("audit_delete");
    site.sql("DELETE FROM audit_log WHERE seq = 4");
    assert_eq!(broken_at(&site), 4);
}

#[test]
fn a_deleted_tail_is_noticed() {
    let site = site_with_history("audit_tail");
    site.sql("DELETE FROM audit_log WHERE seq >= 5");
    assert_eq!(broken_at(&site), 5);
}

#[test]
fn swapped_entries_are_named() {
    let site = site_with_history("audit_swap");
    // Swap the contents of entries 2 and 3 (keeping each row's seq).
    site.sql(
        "UPDATE audit_log SET seq = -2 WHERE seq = 2; UPDATE audit_log SET seq = 2 WHERE seq = 3; UPDATE audit_log SET seq = 3 WHERE seq = -2;",
    );
    assert_eq!(broken_at(&site), 2);
}

#[test]
fn a_rehashed_entry_still_breaks_the_link() {
    let site = site_with_history("audit_rehash");
    // An attacker who recomputes entry 2's own hash still breaks entry 3's link.
    let row = site.sql("SELECT seq || '|' || ts || '|' || actor || '|' || action || '|' || detail || '|' || prev_hash FROM audit_log WHERE seq = 2");
    let parts: Vec<&str> = row.splitn(6, '|').collect();
    let hash = gatehouse_core::access::audit::entry_hash(
        2,
        parts[1].parse().unwrap(),
        parts[2],
        parts[3],
        "forged",
        parts[4],
        parts[5],
    );
    site.sql(&format!(
        "UPDATE audit_log SET subject = 'forged', hash = '{hash}' WHERE seq = 2"
    ));
    assert_eq!(broken_at(&site), 3);
}

#[test]
fn list_shows_entries_without_secrets() {
    let site = TestSite::new("audit_list");
    let (key, id) = site.mint("viewer");
    let list = site.ok_json(&["audit", "list", "--json"]);
    let last = list.as_array().unwrap().last().unwrap();
    assert_eq!(last["action"], "key.mint");
    assert_eq!(last["subject"], id);
    assert!(!list.to_string().contains(&key[20..]));
}
