//! Declares the app's commands so tauri-build generates one `allow-<command>`
//! permission per command; `capabilities/default.json` grants exactly these.
//! A command missing here cannot be granted, and one granted but not
//! registered in `lib.rs` fails at runtime with a clear ACL error.
//! It also stamps the git commit for the About view (`GATEHOUSE_GIT_COMMIT`).

include!("../build-support/git_commit.rs");

fn main() {
    emit_git_commit();
    let commands = &[
        "app_info",
        "open_site",
        "default_site_path",
        "list_keys",
        "mint_key",
        "revoke_key",
        "roll_key",
        "config_clients",
        "generate_client_config",
        "install_client_config",
        "doctor_client_configs",
        "list_connections",
        "open_connection",
        "close_connection",
        "watch_stderr",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri-build failed");
}
