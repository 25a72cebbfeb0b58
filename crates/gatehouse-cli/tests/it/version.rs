//! `gatehouse --version` names the package version and the git commit the
//! binary was built from (stamped by `build.rs`), so a packaged binary can be
//! traced to its source.

use std::process::Command;

use crate::util::BIN;

#[test]
fn version_names_the_package_version_and_the_git_commit() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // The commit this test tree is at; a tree without git (a source tarball)
    // takes it from GATEHOUSE_GIT_COMMIT at build time, as build.rs does.
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_string())
        .or_else(|| std::env::var("GATEHOUSE_GIT_COMMIT").ok())
        .unwrap_or_else(|| "unknown".to_string());
    assert_eq!(
        text.trim_end(),
        format!("gatehouse {} ({head})", env!("CARGO_PKG_VERSION"))
    );
}
