//! Real SDK clients drive the real binary: the official Python SDK (both eras)
//! and the TypeScript SDK (handshake era) initialize, list tools and call them
//! as each actor kind, including a viewer's refused publish, a role change and
//! a key revoked mid-session. The scripts live in tests/interop/; their
//! dependencies are installed (pinned) by scripts/interop-setup.sh.
//!
//! Without those dependencies the tests skip with a message, except under
//! `CI`, where a missing install is a failure rather than a silent pass.

use std::process::Command;

use crate::util::{BIN, TestSite};

#[path = "../../../../tests/interop/interop.rs"]
pub(crate) mod interop;
use interop::{interop_dir, missing};

fn run(site: &TestSite, mut cmd: Command, keys: &[(&str, String)]) {
    cmd.arg(BIN).arg(site.path()).current_dir(interop_dir());
    for (k, v) in keys {
        cmd.env(k, v);
    }
    cmd.env_remove("GATEHOUSE_API_KEY")
        .env_remove("GATEHOUSE_SITE");
    let out = cmd.output().expect("the interop client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "interop client failed:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_sdk_in_both_eras() {
    let python = interop_dir().join(".venv/bin/python");
    if missing("the Python MCP SDK (tests/interop/.venv)", python.exists()) {
        return;
    }
    let site = TestSite::new("interop_py");
    let (viewer, _) = site.mint("viewer");
    let (auto_key, auto_id) = site.mint("viewer");
    let (legacy_key, legacy_id) = site.mint("viewer");
    let mut cmd = Command::new(python);
    cmd.arg("python_client.py");
    run(
        &site,
        cmd,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_REVOKE_KEY_AUTO", auto_key),
            ("INTEROP_REVOKE_ID_AUTO", auto_id),
            ("INTEROP_REVOKE_KEY_LEGACY", legacy_key),
            ("INTEROP_REVOKE_ID_LEGACY", legacy_id),
        ],
    );
}

#[test]
fn typescript_sdk() {
    let sdk = interop_dir().join("node_modules/@modelcontextprotocol/sdk/package.json");
    let node = Command::new("node").arg("--version").output().is_ok();
    if missing(
        "the TypeScript MCP SDK (tests/interop/node_modules) or node",
        sdk.exists() && node,
    ) {
        return;
    }
    let site = TestSite::new("interop_ts");
    let (viewer, _) = site.mint("viewer");
    let (revoke_key, revoke_id) = site.mint("viewer");
    let mut cmd = Command::new("node");
    cmd.arg("ts_client.mjs");
    run(
        &site,
        cmd,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_REVOKE_KEY", revoke_key),
            ("INTEROP_REVOKE_ID", revoke_id),
        ],
    );
}
