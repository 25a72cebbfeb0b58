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
//! the window exists, whether WebKit composites with GL; [`menu`] is the menu
//! bar, per system's convention.
//!
//! A new command: a function taking its own `…Args` struct in its screen's
//! file, one line in `commands/list.rs` (which registers it, declares its
//! permission and types it for the page), one `allow-…` line in
//! `capabilities/default.json`, then `bash scripts/ipc-types.sh`.

pub mod cli_binary;
pub mod commands;
pub mod error;
pub mod ipc_types;
pub mod live;
pub mod menu;
pub mod notify;
pub mod painting;
pub mod prefs;
pub mod state;
pub mod window_state;

/// Reads the command list (`commands/list.rs`) as the handler registration.
macro_rules! commands {
    ($($screen:ident :: $name:ident ($($sig:tt)*) -> $result:ty),* $(,)?) => {
        tauri::generate_handler![$(commands::$screen::$name),*]
    };
}

/// Builds and runs the app until the last window closes.
pub fn run() -> tauri::Result<()> {
    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_window_state::Builder::default().build());
    #[cfg(not(target_os = "macos"))]
    let builder = builder.plugin(tauri_plugin_notification::init());
    builder
        .on_window_event(window_state::on_event)
        .manage(state::AppState::default())
        .setup(|app| {
            use tauri::Manager as _;
            let dir = app.path().app_config_dir().ok();
            app.manage(prefs::Prefs::load(dir));
            menu::install(app.handle())?;
            #[cfg(unix)]
            exit_on_session_signals(app.handle().clone());
            Ok(())
        })
        .invoke_handler(include!("commands/list.rs"))
        .build(tauri::generate_context!())?
        .run(|app, event| {
            if let tauri::RunEvent::Exit = event {
                use tauri::Manager as _;
                let state = app.state::<state::AppState>();
                // serve stops with the app (its stdin is its lifeline too,
                // should this never run: a crash or a kill).
                let _ = tauri::async_runtime::block_on(state.serve.stop());
                // So do the connections' servers, torn down whole, with their
                // records: the process may end without dropping its state.
                tauri::async_runtime::block_on(state.connections.close_all());
                // A clean shutdown: core signs an audit checkpoint of the open
                // site if this window added to its log (`Site::close`).
                if let Some(site) = state.take_site() {
                    tauri::async_runtime::block_on(site.close());
                }
            }
        });
    Ok(())
}

/// Ends the app as closing its window does when the session asks it to stop
/// (SIGTERM at logout or shutdown, SIGHUP when its terminal goes, Ctrl-C):
/// the exit handler in [`run`] then stops serve and signs the open site's
/// audit checkpoint, which a signal's default action skipped. Windows ends
/// a windowed app through its window messages instead.
#[cfg(unix)]
fn exit_on_session_signals(app: tauri::AppHandle) {
    use tokio::signal::unix::{SignalKind, signal};
    tauri::async_runtime::spawn(async move {
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!(
                "cannot listen for SIGTERM, SIGHUP and SIGINT: a signal will end the app without its exit steps"
            );
            return;
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "ending the app");
        app.exit(0);
    });
}

/// The window's reach, checked from the files that set it: what it is
/// granted (`capabilities/default.json`) is what the command list declares,
/// registers and types for the page, and the page's CSP stays strict. The E2E
/// checks both at run time too.
#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The command list's names (`commands/list.rs`).
    fn listed() -> BTreeSet<String> {
        macro_rules! commands {
            ($($screen:ident :: $name:ident ($($sig:tt)*) -> $result:ty),* $(,)?) => {
                [$(stringify!($name)),*]
            };
        }
        let names: &[&str] = &include!("commands/list.rs");
        let set: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
        assert_eq!(set.len(), names.len(), "a command is listed twice");
        set
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
        let listed = listed();
        assert!(listed.len() > 40, "list.rs read: {listed:?}");
        assert_eq!(
            granted, listed,
            "granted in capabilities/default.json (left) vs commands/list.rs"
        );
        // The registration and the permissions read the same list: a copy
        // elsewhere would make them drift again.
        assert!(include_str!("lib.rs").contains(".invoke_handler(include!(\"commands/list.rs\"))"));
        assert!(include_str!("../build.rs").contains("include!(\"src/commands/list.rs\")"));
        // And the page's typed `call` knows exactly these commands.
        let typed: BTreeSet<String> = crate::ipc_types::render()
            .split_once("export type Commands = {\n")
            .expect("a Commands map")
            .1
            .lines()
            .take_while(|l| *l != "};")
            .filter_map(|l| l.trim().split_once(": {").map(|(n, _)| n.to_string()))
            .collect();
        assert_eq!(
            typed, listed,
            "the generated Commands map (left) vs the list"
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
