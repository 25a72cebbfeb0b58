//! Real SDK clients over HTTP against `gatehouse serve`: the official Python
//! SDK in both eras (`auto` settles on 2026-07-28, `legacy` makes the
//! handshake per request) and the TypeScript SDK's default handshake. Each
//! lists and calls tools as public, a viewer key and an editor key (the gate
//! differs) and sees a key revoked through the CLI refused on its next request.
//! Skips without the pinned SDKs, except under `CI`.

use std::process::Command;

use crate::serve_util::Serve;
use crate::util::{BIN, TestSite};

use crate::mcp_interop::interop::{interop_dir, missing};

fn run(site: &TestSite, serve: &Serve, mut cmd: Command, keys: &[(&str, String)]) {
    let url = format!("http://{}/mcp", serve.addr);
    cmd.arg(BIN)
        .arg(site.path())
        .arg(url)
        .current_dir(interop_dir())
        .env("GATEHOUSE_CONFIG_DIR", site.config_dir())
        .env_remove("GATEHOUSE_API_KEY")
        .env_remove("GATEHOUSE_SITE");
    for (k, v) in keys {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the interop client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "interop client failed:\n{stdout}\nstderr:\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    for (_, secret) in keys {
        assert!(
            !serve.stderr().contains(secret.as_str()),
            "a key reached the server log"
        );
    }
}

#[test]
fn python_sdk_over_http_in_both_eras() {
    let python = interop_dir().join(".venv/bin/python");
    if missing("the Python MCP SDK (tests/interop/.venv)", python.exists()) {
        return;
    }
    let site = TestSite::new("serve_interop_py");
    let (viewer, _) = site.mint("viewer");
    let (editor, _) = site.mint("editor");
    let (auto_key, auto_id) = site.mint("viewer");
    let (legacy_key, legacy_id) = site.mint("viewer");
    let serve = Serve::start(&site, &[]);
    let mut cmd = Command::new(python);
    cmd.arg("python_http_client.py");
    run(
        &site,
        &serve,
        cmd,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_EDITOR_KEY", editor),
            ("INTEROP_REVOKE_KEY_AUTO", auto_key),
            ("INTEROP_REVOKE_ID_AUTO", auto_id),
            ("INTEROP_REVOKE_KEY_LEGACY", legacy_key),
            ("INTEROP_REVOKE_ID_LEGACY", legacy_id),
        ],
    );
}

#[test]
fn typescript_sdk_over_http_with_its_default_handshake() {
    let sdk = interop_dir().join("node_modules/@modelcontextprotocol/sdk/package.json");
    if missing(
        "the TypeScript MCP SDK (tests/interop/node_modules)",
        sdk.exists(),
    ) {
        return;
    }
    let site = TestSite::new("serve_interop_ts");
    let (viewer, _) = site.mint("viewer");
    let (editor, _) = site.mint("editor");
    let (revoke, revoke_id) = site.mint("viewer");
    let serve = Serve::start(&site, &[]);
    let mut cmd = Command::new("node");
    cmd.arg("ts_http_client.mjs");
    run(
        &site,
        &serve,
        cmd,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_EDITOR_KEY", editor),
            ("INTEROP_REVOKE_KEY", revoke),
            ("INTEROP_REVOKE_ID", revoke_id),
        ],
    );
}
