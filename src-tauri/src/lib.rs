//! Gatehouse desktop shell: a thin adapter between the web page in `ui/` and
//! `gatehouse-core`.
//!
//! Map: [`commands`] holds one small file of Tauri commands per screen, each an
//! adapter that extracts its inputs, calls one core function and converts the
//! error; [`error`] is the `{code, message, hint}` object that crosses IPC;
//! [`state`] is what the app remembers between commands; [`ipc_types`]
//! generates the page's TypeScript types from the Rust ones; [`cli_binary`] finds
//! the `gatehouse` CLI that generated client configs start. A new command is also
//! listed in `src-tauri/build.rs` and granted in `capabilities/default.json`.

pub mod cli_binary;
pub mod commands;
pub mod error;
pub mod ipc_types;
pub mod state;

/// Builds and runs the app until the last window closes.
pub fn run() -> tauri::Result<()> {
    tauri::Builder::default()
        .manage(state::AppState::default())
        .invoke_handler(tauri::generate_handler![
            commands::app::app_info,
            commands::site::open_site,
            commands::site::default_site_path,
            commands::keys::list_keys,
            commands::keys::mint_key,
            commands::keys::revoke_key,
            commands::keys::roll_key,
            commands::client_config::config_clients,
            commands::client_config::generate_client_config,
            commands::client_config::install_client_config,
            commands::client_config::doctor_client_configs,
            commands::connections::list_connections,
            commands::connections::open_connection,
            commands::connections::close_connection,
            commands::connections::watch_stderr,
        ])
        .run(tauri::generate_context!())
}
