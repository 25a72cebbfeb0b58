//! Declares the app's commands so tauri-build generates one `allow-<command>`
//! permission per command; `capabilities/default.json` grants exactly these.
//! The names come from `src/commands/list.rs`, the list `lib.rs` registers.
//! It also stamps the git commit for the About view (`GATEHOUSE_GIT_COMMIT`).

include!("../build-support/git_commit.rs");

/// Reads the command list as its names.
macro_rules! commands {
    ($($screen:ident :: $name:ident ($($sig:tt)*) -> $result:ty),* $(,)?) => {
        &[$(stringify!($name)),*]
    };
}

fn main() {
    emit_git_commit();
    println!("cargo:rerun-if-changed=src-tauri/src/commands/list.rs");
    let commands: &[&str] = include!("src/commands/list.rs");
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri-build failed");
}
