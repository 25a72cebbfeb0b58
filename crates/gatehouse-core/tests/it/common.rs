//! Shared helpers of the client integration tests: fixture paths, a scratch
//! root per test, and /proc checks.
#![allow(dead_code)]

use std::path::PathBuf;

use gatehouse_core::sandbox::{self, ChildSpec, ScratchRoot};

/// A fixture script under the repo's `tests/fixtures/`.
pub fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    p.canonicalize()
        .expect("fixture exists")
        .to_string_lossy()
        .into_owned()
}

/// `python3 <fixture> args…`.
pub fn python(name: &str, args: &[&str]) -> ChildSpec {
    let mut spec = ChildSpec::new("python3").arg(fixture(name));
    for a in args {
        spec = spec.arg(*a);
    }
    spec
}

/// A fresh scratch root in a temp dir; this process reaps orphaned grandchildren.
pub fn scratch_root() -> (tempfile::TempDir, ScratchRoot) {
    sandbox::become_subreaper().expect("subreaper");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (root, _) = ScratchRoot::open(tmp.path().join("scratch")).expect("scratch root");
    (tmp, root)
}

/// Every process (zombies included) whose process group is `pgid`, per /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    gatehouse_core::sandbox::ProcessGroup { pgid }.members()
}

/// Entries left in the scratch root.
pub fn scratch_entries(root: &ScratchRoot) -> Vec<String> {
    std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A fresh scratch site: its embedded SQLite file, or a fresh PostgreSQL
/// database when `GATEHOUSE_TEST_PG_URL` is set (`.ci/run` runs the suite twice).
pub async fn fresh_site(name: &str) -> (tempfile::TempDir, gatehouse_core::site::Site) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("site");
    let url =
        gatehouse_test_pg::base_url().map(|base| gatehouse_test_pg::fresh_database(&base, name).0);
    let site = gatehouse_core::site::init(&dir, Some(name), true, url.as_deref())
        .await
        .unwrap();
    (tmp, site)
}
