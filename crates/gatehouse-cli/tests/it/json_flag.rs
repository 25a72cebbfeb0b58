//! `--json` is one flag of the whole command line: it may stand before or
//! after the subcommand, and it turns errors into JSON objects too, even
//! when the command line itself is what was refused.

use serde_json::Value;

use crate::util::TestSite;

/// The one JSON error object on stderr of a failed run.
fn json_error(out: &std::process::Output) -> Value {
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout must stay clean on failure");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line: {stderr}");
    serde_json::from_str::<Value>(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"))
        ["error"]
        .clone()
}

#[test]
fn json_before_or_after_the_subcommand_prints_the_same_result() {
    let site = TestSite::new("json_position");
    site.mint("viewer");
    let after = site.ok_json(&["keys", "list", "--json"]);
    let before = site.ok_json(&["--json", "keys", "list"]);
    assert_eq!(after.as_array().map(Vec::len), Some(1), "{after}");
    assert_eq!(before, after);
    // Errors follow the flag wherever it stands.
    for args in [
        ["--json", "keys", "revoke", "key_missing"],
        ["keys", "--json", "revoke", "key_missing"],
        ["keys", "revoke", "key_missing", "--json"],
    ] {
        let e = json_error(&site.run(&args));
        assert_eq!(e["code"], "KEY_NOT_FOUND", "{args:?}: {e}");
    }
    let text = site.run(&["keys", "revoke", "key_missing"]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(stderr.starts_with("error[KEY_NOT_FOUND]: "), "{stderr}");
}

#[test]
fn a_refused_command_line_is_a_json_error_when_json_was_asked() {
    let site = TestSite::new("json_parse_error");
    for args in [
        &["keys", "list", "--json", "--no-such-flag"][..],
        &["--json", "keys", "list", "--no-such-flag"],
        &["--json", "no-such-command"],
    ] {
        let out = site.run(args);
        // clap's exit code for a usage error, whatever the format.
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = json_error(&out);
        assert_eq!(e["code"], "INPUT_INVALID", "{args:?}: {e}");
        let bad = args
            .iter()
            .find(|a| a.starts_with("no-") || a.starts_with("--no-"))
            .unwrap();
        assert!(e["message"].as_str().unwrap().contains(bad), "{e}");
        assert!(e["hint"].as_str().unwrap().contains("Usage:"), "{e}");
    }
    // Without --json: clap's own text.
    let out = site.run(&["keys", "list", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: unexpected argument '--no-such-flag'"),
        "{stderr}"
    );
    // What follows `--` is a connection's command line, not ours.
    let out = site.run(&[
        "connections",
        "add",
        "--no-such-flag",
        "x",
        "--",
        "srv",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    // Help is not an error, with or without --json.
    let out = site.run(&["keys", "list", "--help", "--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage:"));
}
