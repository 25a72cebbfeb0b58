//! Gatehouse desktop shell: a thin adapter between the web page in `ui/` and
//! `gatehouse-core`.
//!
//! Map: [`commands`] holds one small file of Tauri commands per screen, each an
//! adapter that extracts its inputs, calls one core function and converts the
//! error; [`error`] is the `{code, message, hint}` object that crosses IPC;
//! [`state`] is what the app remembers between commands; [`ipc_types`]
//! generates the page's TypeScript types from the Rust ones; [`cli_binary`] finds
//! the `gatehouse` CLI that generated client configs start; [`prefs`] is what
//! the app remembers between runs (recent sites, last screen; the window's
//! size and position are kept by the window-state plugin, written to disk by
//! [`window_state`] once the window settles); [`painting`] decides, before
//! the window exists, whether WebKit composites with GL. A new command is also
//! listed in `src-tauri/build.rs` and granted in `capabilities/default.json`.

pub mod cli_binary;
pub mod commands;
pub mod error;
pub mod ipc_types;
pub mod live;
pub mod painting;
pub mod prefs;
pub mod state;
pub mod window_state;

/// Builds and runs the app until the last window closes.
pub fn run() -> tauri::Result<()> {
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .on_window_event(window_state::on_event)
        .manage(state::AppState::default())
        .setup(|app| {
            use tauri::Manager as _;
            let dir = app.path().app_config_dir().ok();
            app.manage(prefs::Prefs::load(dir));
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::app::app_info,
            commands::app::last_screen,
            commands::app::remember_screen,
            commands::site::open_site,
            commands::site::create_site,
            commands::site::pick_folder,
            commands::site::recent_sites,
            commands::site::forget_site,
            commands::site::default_site_path,
            commands::keys::key_overview,
            commands::users::list_users,
            commands::users::create_user,
            commands::users::set_user_roles,
            commands::users::set_user_disabled,
            commands::users::permission_table,
            commands::site_config::list_site_config,
            commands::site_config::set_site_config,
            commands::site_config::unset_site_config,
            commands::audit::audit_page,
            commands::audit::verify_audit,
            commands::audit::export_audit,
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
            // Connections screen (issue 12): live state, editing, consent, tools, calls.
            commands::connections::unwatch_stderr,
            commands::connections::connection_status,
            commands::connection_edit::connection_form,
            commands::connection_edit::save_connection,
            commands::connection_edit::duplicate_connection,
            commands::connection_edit::remove_connection,
            commands::connection_edit::consent_request,
            commands::connection_edit::grant_consent,
            commands::connection_edit::approve_tools,
            commands::connection_calls::list_tools,
            commands::connection_calls::tool_hold,
            commands::connection_calls::call_tool,
            commands::connection_calls::cancel_call,
            commands::connection_calls::call_records,
            commands::connection_calls::save_call_result,
            commands::connection_calls::save_stderr,
            // Actor preview screen (issue 12).
            commands::actor_preview::preview_choices,
            commands::actor_preview::preview_actors,
            // Approvals screen: the owner's queue of held calls.
            commands::approvals::held_calls,
            commands::approvals::decide_held_call,
            // Serve panel: the supervised `gatehouse serve`.
            commands::serve::start_serve,
            commands::serve::serve_status,
            commands::serve::stop_serve,
            commands::serve::serve_client_configs,
        ])
        .build(tauri::generate_context!())?
        .run(|app, event| {
            if let tauri::RunEvent::Exit = event {
                use tauri::Manager as _;
                let state = app.state::<state::AppState>();
                // serve stops with the app (its stdin is its lifeline too,
                // should this never run: a crash or a kill).
                let _ = tauri::async_runtime::block_on(state.serve.stop());
                // A clean shutdown: core signs an audit checkpoint of the open
                // site if this window added to its log (`Site::close`).
                if let Some(site) = state.take_site() {
                    tauri::async_runtime::block_on(site.close());
                }
            }
        });
    Ok(())
}

/// The window's reach, checked from the files that set it: what it is
/// granted (`capabilities/default.json`), what is declared (`build.rs`) and
/// what is registered (`run`'s handler list) are the same commands, and the
/// page's CSP stays strict. The E2E checks both at run time too.
#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The text of `source` between `open` and the next `close`.
    fn between<'a>(source: &'a str, open: &str, close: &str) -> &'a str {
        source
            .split_once(open)
            .and_then(|(_, rest)| rest.split_once(close))
            .unwrap_or_else(|| panic!("no {open}…{close}"))
            .0
    }

    /// The quoted names in `build.rs`'s command list.
    fn declared() -> BTreeSet<String> {
        between(include_str!("../build.rs"), "let commands = &[", "];")
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('"'))
            .map(|l| l.trim_matches(|c| c == '"' || c == ',').to_string())
            .collect()
    }

    /// The `commands::screen::name` entries of `generate_handler!`.
    fn registered() -> BTreeSet<String> {
        between(include_str!("lib.rs"), "generate_handler![", "])")
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("commands::"))
            .map(|l| {
                l.trim_end_matches(',')
                    .rsplit("::")
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    fn config(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("valid JSON")
    }

    #[test]
    fn the_window_is_granted_exactly_the_apps_own_commands() {
        let capability = config(include_str!("../../capabilities/default.json"));
        assert_eq!(capability["windows"], serde_json::json!(["main"]));
        let granted: BTreeSet<String> = capability["permissions"]
            .as_array()
            .expect("a permission list")
            .iter()
            .map(|p| {
                let p = p
                    .as_str()
                    .expect("permissions by name only, no scoped entries");
                let name = p.strip_prefix("allow-");
                assert!(
                    name.is_some() && !p.contains(':'),
                    "{p}: only the app's own allow-<command> permissions may be granted"
                );
                name.unwrap().replace('-', "_")
            })
            .collect();
        let declared = declared();
        assert!(declared.len() > 40, "build.rs parsed: {declared:?}");
        assert_eq!(granted, declared, "granted (left) vs declared in build.rs");
        assert_eq!(
            registered(),
            declared,
            "registered in lib.rs (left) vs declared"
        );
    }

    #[test]
    fn the_page_runs_under_a_strict_csp() {
        let conf = config(include_str!("../../tauri.conf.json"));
        let security = &conf["app"]["security"];
        assert!(
            security
                .get("dangerousDisableAssetCspModification")
                .is_none_or(|v| v == false),
            "Tauri must keep adding its hashes and nonces to the CSP"
        );
        assert!(
            conf["app"]
                .get("withGlobalTauri")
                .is_none_or(|v| v == false),
            "the page reaches Tauri only through its own imports"
        );
        let csp = security["csp"].as_str().expect("a CSP string");
        let directives: Vec<(&str, Vec<&str>)> = csp
            .split(';')
            .map(|d| {
                let mut words = d.split_whitespace();
                (words.next().unwrap_or(""), words.collect())
            })
            .collect();
        let sources = |name: &str| {
            directives
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, s)| s.clone())
        };
        assert_eq!(sources("default-src"), Some(vec!["'self'"]), "{csp}");
        assert_eq!(
            sources("script-src"),
            None,
            "scripts follow default-src: {csp}"
        );
        assert_eq!(
            sources("connect-src"),
            Some(vec!["ipc:", "http://ipc.localhost"]),
            "{csp}"
        );
        for (name, list) in &directives {
            for source in list {
                assert!(
                    !matches!(
                        *source,
                        "*" | "'unsafe-inline'" | "'unsafe-eval'" | "https:" | "http:"
                    ),
                    "{name} allows {source}: {csp}"
                );
            }
        }
    }
}
