//! docs/permissions.md is rendered from the permission table in code.

use crate::util;

#[test]
fn the_docs_table_matches_the_code() {
    let out = std::process::Command::new(util::BIN)
        .args(["permissions", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/permissions.md");
    let doc = std::fs::read_to_string(doc_path).expect("docs/permissions.md exists");
    assert_eq!(
        doc.trim_end(),
        generated.trim_end(),
        "regenerate with: gatehouse permissions --markdown > docs/permissions.md"
    );
}
