//! Several `gatehouse` processes at once on one site (SQLite file or PostgreSQL
//! database, from the environment) minting, revoking and creating users: no
//! update is lost, races have exactly one winner, the audit log holds exactly
//! one entry per successful operation in one valid chain — and `gatehouse mcp`
//! servers running meanwhile refuse their key on the call after its revocation.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;
use std::sync::Arc;

use crate::mcp_util::{McpSite, tool_error};
use crate::util::{TestSite, failure};
use serde_json::{Value, json};

const WORKERS: usize = 6;
const ROUNDS: usize = 4;

/// What one process did.
#[derive(Debug)]
enum Outcome {
    Minted(String),
    Revoked(String),
    Created(String),
    /// An expected refusal: the code and the operation.
    Refused(String, String),
}

fn outcome(op: &str, out: Output, args: &[&str]) -> Outcome {
    if !out.status.success() {
        let f = failure(out, args);
        return Outcome::Refused(f.code, op.to_string());
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    match op {
        "mint" => {
            let v: Value = serde_json::from_str(&stdout).unwrap();
            Outcome::Minted(v["id"].as_str().unwrap().to_string())
        }
        "revoke" => Outcome::Revoked(args[2].to_string()),
        "create" => Outcome::Created(args[3].to_string()),
        _ => unreachable!(),
    }
}

/// One worker: a sequence of processes, each one operation. Workers race on
/// purpose: every worker revokes the same shared keys and creates the same
/// shared user, besides its own mints, revokes and users.
fn worker(site: &TestSite, w: usize, shared_keys: &[String]) -> Vec<Outcome> {
    let mut done = Vec::new();
    let mut run = |op: &str, args: &[&str]| {
        let out = site.run(args);
        let o = outcome(op, out, args);
        done.push(o);
    };
    for r in 0..ROUNDS {
        let label = format!("w{w}r{r}");
        run(
            "mint",
            &[
                "keys", "mint", "--label", &label, "--roles", "viewer", "--json",
            ],
        );
        let email = format!("w{w}r{r}@example.com");
        run(
            "create",
            &["users", "create", "--email", &email, "--roles", "author"],
        );
        let shared = &shared_keys[(w + r) % shared_keys.len()];
        run("revoke", &["keys", "revoke", shared]);
        run(
            "create",
            &[
                "users",
                "create",
                "--email",
                &format!("shared{r}@example.com"),
                "--roles",
                "viewer",
            ],
        );
    }
    // Revoke one of its own keys.
    let own: Vec<String> = done
        .iter()
        .filter_map(|o| match o {
            Outcome::Minted(id) => Some(id.clone()),
            _ => None,
        })
        .collect();
    if let Some(id) = own.first() {
        let out = site.run(&["keys", "revoke", id]);
        done.push(outcome("revoke", out, &["keys", "revoke", id]));
    }
    done
}

#[test]
fn processes_hammering_one_site_lose_nothing() {
    let site = Arc::new(TestSite::new("concurrency"));
    let shared_keys: Vec<String> = (0..5).map(|_| site.mint("viewer").1).collect();

    // Two long-running servers, each on its own key, working through the storm.
    let (key_a, id_a) = site.mint("viewer");
    let (key_b, id_b) = site.mint("editor");
    let mut servers = [
        site.mcp(&[], &[("GATEHOUSE_API_KEY", key_a.as_str())]),
        site.mcp(&[], &[("GATEHOUSE_API_KEY", key_b.as_str())]),
    ];
    for (i, mcp) in servers.iter_mut().enumerate() {
        mcp.initialize("2025-11-25");
        let ok = mcp.call(1, "content_list", json!({}), None);
        assert_eq!(ok["result"]["isError"], false, "server {i}: {ok}");
    }

    let baseline = site.audit().len();
    let shared = Arc::new(shared_keys.clone());
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (site, shared) = (site.clone(), shared.clone());
            std::thread::spawn(move || worker(&site, w, &shared))
        })
        .collect();

    // Meanwhile: the servers keep answering, then their keys are revoked by
    // other processes and the very next call of each is refused.
    for (i, mcp) in servers.iter_mut().enumerate() {
        let ok = mcp.call(2, "content_search", json!({"query": "scratch"}), None);
        assert_eq!(ok["result"]["isError"], false, "server {i}: {ok}");
    }
    site.ok(&["keys", "revoke", &id_a]);
    site.ok(&["keys", "revoke", &id_b]);
    for (i, mcp) in servers.iter_mut().enumerate() {
        let err = tool_error(&mcp.call(3, "content_list", json!({}), None));
        assert_eq!(err["code"], "ACTOR_API_KEY_INVALID", "server {i}: {err}");
        assert_eq!(err["detail"]["reason"], "revoked", "server {i}: {err}");
    }

    let outcomes: Vec<Outcome> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("worker panicked"))
        .collect();

    let mut minted = BTreeSet::new();
    let mut revoked = BTreeSet::new();
    let mut created = BTreeSet::new();
    let mut refused: BTreeMap<(String, String), usize> = BTreeMap::new();
    for o in &outcomes {
        match o {
            Outcome::Minted(id) => assert!(minted.insert(id.clone()), "id {id} minted twice"),
            Outcome::Revoked(id) => assert!(revoked.insert(id.clone()), "{id} revoked twice"),
            Outcome::Created(email) => {
                assert!(created.insert(email.clone()), "{email} created twice")
            }
            Outcome::Refused(code, op) => {
                *refused.entry((op.clone(), code.clone())).or_default() += 1
            }
        }
    }
    eprintln!(
        "{} processes: {} mints, {} revokes, {} user creates, refused {refused:?}",
        outcomes.len(),
        minted.len(),
        revoked.len(),
        created.len()
    );
    // The only refusals are lost races, never a storage error or a busy database.
    for (op, code) in refused.keys() {
        assert!(
            (op == "revoke" && code == "KEY_ALREADY_REVOKED")
                || (op == "create" && code == "USER_EXISTS"),
            "unexpected refusal {code} for {op}"
        );
    }
    assert_eq!(minted.len(), WORKERS * ROUNDS, "every mint succeeds");
    // Each shared key and each shared user has exactly one winner.
    for id in &shared_keys {
        assert!(revoked.contains(id), "shared key {id} was never revoked");
    }
    for r in 0..ROUNDS {
        assert!(created.contains(&format!("shared{r}@example.com")));
    }
    assert_eq!(
        created.len(),
        WORKERS * ROUNDS + ROUNDS,
        "own users all created, each shared user once"
    );

    // Nothing lost: the store shows every successful operation.
    let keys = site.ok_json(&["keys", "list", "--json"]);
    let status: BTreeMap<String, String> = keys
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["id"].as_str().unwrap().to_string(),
                k["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for id in &minted {
        assert!(status.contains_key(id), "minted key {id} is missing");
    }
    for id in &revoked {
        assert_eq!(status[id], "revoked", "revocation of {id} was lost");
    }
    let revoked_in_store = status.values().filter(|s| *s == "revoked").count();
    assert_eq!(
        revoked_in_store,
        revoked.len() + 2,
        "no other key is revoked"
    );
    let users: BTreeSet<String> = site
        .ok_json(&["users", "list", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap().to_string())
        .collect();
    assert!(created.is_subset(&users), "a created user is missing");

    // One audit entry per successful operation, plus the two server-key
    // revocations and the servers' four tool calls since the baseline (each
    // call is audited, refused or not), in one chain that verifies.
    let audit = site.audit();
    let successes = minted.len() + revoked.len() + created.len() + 2 + 4;
    assert_eq!(
        audit.len(),
        baseline + successes,
        "audit entries lost or extra"
    );
    let count = |action: &str| audit.iter().filter(|e| e["action"] == action).count();
    assert_eq!(count("key.mint"), minted.len() + shared_keys.len() + 2);
    assert_eq!(count("key.revoke"), revoked.len() + 2);
    assert_eq!(count("user.create"), created.len());
    assert_eq!(count("mcp.tool_call"), 6, "2 before the baseline, 4 after");
    let verified = site.ok(&["audit", "verify"]);
    assert!(
        verified.contains(&format!("{} entries", baseline + successes)),
        "{verified}"
    );
}
