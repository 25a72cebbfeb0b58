//! Real SDK clients drive the real binary: the official Python SDK (both eras)
//! and the TypeScript SDK (handshake era) initialize, list tools and call them
//! as each actor kind, including a viewer's refused publish, a role change and
//! a key revoked mid-session. The scripts live in tests/interop/; their
//! dependencies are installed (pinned) by scripts/interop-setup.sh.
//!
//! Without those dependencies the tests skip with a message, except under
//! `CI`, where a missing install is a failure rather than a silent pass.

use crate::sdk::SdkClient;
use crate::util::TestSite;

/// Runs `client` with the keys in its environment; the script fails on any
/// answer it did not expect.
fn run(client: SdkClient, keys: &[(&str, String)]) {
    keys.iter().fold(client, |c, (k, v)| c.env(k, v)).run();
}

#[test]
fn python_sdk_in_both_eras() {
    let site = TestSite::new("interop_py");
    let Some(client) = SdkClient::python("python_client.py", &site) else {
        return;
    };
    let (viewer, _) = site.mint("viewer");
    let (auto_key, auto_id) = site.mint("viewer");
    let (legacy_key, legacy_id) = site.mint("viewer");
    run(
        client,
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
    let site = TestSite::new("interop_ts");
    let Some(client) = SdkClient::node("ts_client.mjs", &site) else {
        return;
    };
    let (viewer, _) = site.mint("viewer");
    let (revoke_key, revoke_id) = site.mint("viewer");
    run(
        client,
        &[
            ("INTEROP_VIEWER_KEY", viewer),
            ("INTEROP_REVOKE_KEY", revoke_key),
            ("INTEROP_REVOKE_ID", revoke_id),
        ],
    );
}
