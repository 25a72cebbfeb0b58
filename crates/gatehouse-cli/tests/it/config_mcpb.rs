//! `gatehouse config mcpb` through the real binary: the bundle unpacks (with
//! the system's `unzip`, as Claude Desktop unpacks it), its manifest says what
//! the MCPB spec requires, and the server it names, started the way Claude
//! Desktop starts it (`${__dirname}` and `${user_config.api_key}` substituted),
//! answers `initialize` as the key's actor.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::TestSite;

#[test]
fn mcpb_bundle_unpacks_and_its_server_answers_initialize() {
    let site = TestSite::plain("mcpb");
    let (key, _) = site.mint("viewer");
    let work = tempfile::tempdir().unwrap();
    let out_file = work.path().join("blog.mcpb");
    let out = site
        .command()
        .args(["config", "mcpb", "--json", "--out"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(outcome["bytes"].as_u64().unwrap() > 1000);
    assert!(!work.path().join("blog.mcpb.partial").exists());

    let unpacked = work.path().join("unpacked");
    let status = Command::new("unzip")
        .arg("-q")
        .arg(&out_file)
        .arg("-d")
        .arg(&unpacked)
        .status()
        .expect("unzip runs");
    assert!(status.success());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(unpacked.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest, outcome["manifest"]);
    assert_eq!(manifest["server"]["type"], "binary");
    assert_eq!(manifest["user_config"]["api_key"]["sensitive"], true);
    let config = &manifest["server"]["mcp_config"];
    assert_eq!(config["env"]["GATEHOUSE_API_KEY"], "${user_config.api_key}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let entry = unpacked.join(manifest["server"]["entry_point"].as_str().unwrap());
        let mode = std::fs::metadata(&entry).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "the bundled binary is not executable");
    }

    // Start it as Claude Desktop would.
    let dirname = unpacked.to_str().unwrap();
    let command = config["command"]
        .as_str()
        .unwrap()
        .replace("${__dirname}", dirname);
    let args: Vec<String> = serde_json::from_value(config["args"].clone()).unwrap();
    let mut child = Command::new(command)
        .args(&args)
        .env_clear()
        .env("GATEHOUSE_API_KEY", &key)
        .env("GATEHOUSE_CONFIG_DIR", site.config_dir())
        .env("GATEHOUSE_SCRATCH_DIR", site.scratch_dir())
        .current_dir(work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"claude-desktop-extension","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "gatehouse",
        "{answer}"
    );
}
