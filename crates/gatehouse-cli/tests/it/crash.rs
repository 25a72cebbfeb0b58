//! `kill -9` in the middle of mints leaves the store consistent: every stored
//! key has its audit entry and vice versa, and the chain still verifies.

use std::time::Duration;

use crate::util::TestSite;

#[test]
fn kill_9_during_mint_leaves_the_store_consistent() {
    let site = TestSite::new("crash_mint");
    let mut finished = 0;
    for i in 0..24u64 {
        let mut child = site
            .command()
            .args([
                "keys",
                "mint",
                "--label",
                &format!("k{i}"),
                "--roles",
                "viewer",
                "--json",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Spread the kills over start-up, hashing and the commit.
        std::thread::sleep(Duration::from_millis(5 + (i * 7) % 120));
        let _ = nix_kill(child.id());
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
    }
    let keys = site.ok_json(&["keys", "list", "--json"]);
    let keys = keys.as_array().unwrap();
    eprintln!(
        "{finished} of 24 mints finished before the kill; {} keys stored",
        keys.len()
    );
    let audit = site.ok_json(&["audit", "list", "--limit", "1000", "--json"]);
    let mints: Vec<&serde_json::Value> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "key.mint")
        .collect();
    assert_eq!(
        keys.len(),
        mints.len(),
        "keys and their audit entries must commit together"
    );
    for k in keys {
        assert!(
            mints.iter().any(|m| m["subject"] == k["id"]),
            "key {} has no audit entry",
            k["id"]
        );
    }
    assert!(
        keys.len() >= finished,
        "a mint that reported success was lost"
    );
    site.ok(&["audit", "verify"]);
    // The store still takes writes after the crashes.
    site.mint("viewer");
    site.ok(&["audit", "verify"]);
}

fn nix_kill(pid: u32) -> std::io::Result<()> {
    let status = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("kill failed"))
    }
}
