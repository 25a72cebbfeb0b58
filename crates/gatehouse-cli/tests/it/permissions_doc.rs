//! docs/permissions.md is rendered from the permission table in code: a
//! snapshot (expect-test) of `gatehouse permissions --markdown`;
//! `UPDATE_EXPECT=1` rewrites it.

use crate::util;

#[test]
fn the_docs_table_matches_the_code() {
    let out = std::process::Command::new(util::BIN)
        .args(["permissions", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/permissions.md");
    expect_test::expect_file![doc].assert_eq(&generated);
}
