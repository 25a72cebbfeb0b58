// Shared by `src-tauri/build.rs` and `crates/gatehouse-cli/build.rs` (via
// `include!`): sets `GATEHOUSE_GIT_COMMIT` for `env!` so `gatehouse --version`
// and the desktop app's About name the commit they were built from.
//
// Order: `git rev-parse --short HEAD` in the source tree, else the
// `GATEHOUSE_GIT_COMMIT` environment variable (a source tarball has no .git),
// else `unknown`. Uncommitted edits are not flagged: the script reruns only
// when HEAD moves, so a `-dirty` mark would go stale (packages are built from a
// clean checkout).

fn emit_git_commit() {
    const ENV: &str = "GATEHOUSE_GIT_COMMIT";
    println!("cargo:rerun-if-env-changed={ENV}");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let commit = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(hash) => {
            // Rebuild when HEAD moves (a commit, a checkout): its reflog and
            // HEAD itself change then. A worktree has its own git dir.
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                for file in ["HEAD", "logs/HEAD"] {
                    let path = std::path::Path::new(&dir).join(file);
                    if path.exists() {
                        println!("cargo:rerun-if-changed={}", path.display());
                    }
                }
            }
            hash
        }
        None => std::env::var(ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env={ENV}={commit}");
}
