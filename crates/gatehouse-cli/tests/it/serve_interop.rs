//! Real SDK clients over HTTP against `gatehouse serve`: the official Python
//! SDK in both eras (`auto` settles on 2026-07-28, `legacy` makes the
//! handshake per request) and the TypeScript SDK's default handshake. Each
//! lists and calls tools as public, a viewer key and an editor key (the gate
//! differs) and sees a key revoked through the CLI refused on its next request.
//! Skips without the pinned SDKs, except under `CI`.

use crate::sdk::SdkClient;
use crate::serve_util::Serve;
use crate::util::TestSite;

/// Runs `client` against `serve`'s endpoint with the keys in its
/// environment, then checks that no key reached the server's log.
fn run(client: SdkClient, serve: &Serve, keys: &[(&str, String)]) {
    keys.iter()
        .fold(
            client.arg(format!("http://{}/mcp", serve.addr)),
            |c, (k, v)| c.env(k, v),
        )
        .run_against(serve);
    for (_, secret) in keys {
        assert!(
            !serve.stderr().contains(secret.as_str()),
            "a key reached the server log"
        );
    }
}

#[test]
fn python_sdk_over_http_in_both_eras() {
    let site = TestSite::new("serve_interop_py");
    let Some(client) = SdkClient::python("python_http_client.py", &site) else {
        return;
    };
    let (viewer, _) = site.mint("viewer");
    let (editor, _) = site.mint("editor");
    let (auto_key, auto_id) = site.mint("viewer");
    let (legacy_key, legacy_id) = site.mint("viewer");
    let serve = Serve::start(&site, &[]);
    run(
        client,
        &serve,
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
    let site = TestSite::new("serve_interop_ts");
    let Some(client) = SdkClient::node("ts_http_client.mjs", &site) else {
        return;
    };
    let (viewer, _) = site.mint("viewer");
    let (editor, _) = site.mint("editor");
    let (revoke, revoke_id) = site.mint("viewer");
    let serve = Serve::start(&site, &[]);
    run(
        client,
        &serve,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_EDITOR_KEY", editor),
            ("INTEROP_REVOKE_KEY", revoke),
            ("INTEROP_REVOKE_ID", revoke_id),
        ],
    );
}
