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
        "last_screen",
        "remember_screen",
        "open_site",
        "create_site",
        "pick_folder",
        "recent_sites",
        "forget_site",
        "default_site_path",
        "key_overview",
        "list_users",
        "create_user",
        "set_user_roles",
        "set_user_disabled",
        "permission_table",
        "list_site_config",
        "set_site_config",
        "unset_site_config",
        "audit_page",
        "verify_audit",
        "export_audit",
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
        // Connections and Actor preview screens (issue 12).
        "unwatch_stderr",
        "connection_status",
        "connection_form",
        "save_connection",
        "duplicate_connection",
        "remove_connection",
        "consent_request",
        "grant_consent",
        "approve_tools",
        "list_tools",
        "tool_hold",
        "call_tool",
        "cancel_call",
        "call_records",
        "save_call_result",
        "save_stderr",
        "preview_choices",
        "preview_actors",
        "held_calls",
        "decide_held_call",
        "start_serve",
        "serve_status",
        "stop_serve",
        "serve_client_configs",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri-build failed");
}
