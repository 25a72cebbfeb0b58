//! Stamps the git commit into the binary for `gatehouse --version`.

include!("../../build-support/git_commit.rs");

fn main() {
    emit_git_commit();
}
