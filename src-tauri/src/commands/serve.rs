//! Commands for the Serve panel: core's supervised `gatehouse serve` for the
//! open site (start, status, stop), its settings kept in `[serve]` of the
//! site's gatehouse.toml (loaded when the panel opens, saved on start or by
//! Save), and every client's remote config for the URL it serves.

use gatehouse_core::client_config::merge::mask_keys;
use gatehouse_core::supervise::remote::{self, RemoteConfig, RemoteKey};
use gatehouse_core::supervise::{self, ServeSettings, ServeSpec, ServeStatus};
use tauri::State;

use crate::cli_binary;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `start_serve` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct StartServeArgs {
    /// Listen address, allowlists, public URL (OAuth), TLS files, proxies.
    pub settings: ServeSettings,
}

/// Starts `gatehouse serve` for the open site; answers once it serves. The
/// settings are saved into `[serve]` first (see [`prepare_start`]).
#[tauri::command(rename_all = "snake_case")]
pub async fn start_serve(
    args: StartServeArgs,
    state: State<'_, AppState>,
) -> IpcResult<ServeStatus> {
    let StartServeArgs { settings } = args;
    let spec = prepare_start(&state, cli_binary::locate()?, &settings)?;
    Ok(state.serve.start(spec).await?)
}

/// Checks `settings` as serve will, then keeps them in the site's
/// gatehouse.toml, so the panel (and a `gatehouse serve` run by hand) has
/// them next time; a start that fails (a port taken) keeps what was typed.
/// Refused settings are neither saved nor started.
fn prepare_start(
    state: &AppState,
    cli: std::path::PathBuf,
    settings: &ServeSettings,
) -> Result<ServeSpec, gatehouse_core::Error> {
    let site = state.site()?;
    let spec = ServeSpec::new(cli, site.dir.clone(), settings)?;
    supervise::save_settings(&site.dir, &spec.settings())?;
    Ok(spec)
}

/// The arguments of the `serve_saved_settings` command (none).
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ServeSavedSettingsArgs {}

/// The settings kept in `[serve]` of the open site's gatehouse.toml (serve's
/// defaults where it says nothing), for the form when no server runs.
#[tauri::command(rename_all = "snake_case")]
pub fn serve_saved_settings(
    args: ServeSavedSettingsArgs,
    state: State<'_, AppState>,
) -> IpcResult<ServeSettings> {
    let ServeSavedSettingsArgs {} = args;
    Ok(supervise::saved_settings(&state.site()?.dir)?)
}

/// The arguments of the `save_serve_settings` command.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SaveServeSettingsArgs {
    pub settings: ServeSettings,
}

/// Keeps `settings` in `[serve]` without starting anything (for a server
/// run elsewhere, by hand or by systemd); answers them as saved.
#[tauri::command(rename_all = "snake_case")]
pub fn save_serve_settings(
    args: SaveServeSettingsArgs,
    state: State<'_, AppState>,
) -> IpcResult<ServeSettings> {
    let SaveServeSettingsArgs { settings } = args;
    Ok(supervise::save_settings(&state.site()?.dir, &settings)?)
}

/// The arguments of the `serve_status` command (none).
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ServeStatusArgs {}

/// The server's state and live counters; `null` when none was started.
#[tauri::command(rename_all = "snake_case")]
pub async fn serve_status(
    args: ServeStatusArgs,
    state: State<'_, AppState>,
) -> IpcResult<Option<ServeStatus>> {
    let ServeStatusArgs {} = args;
    Ok(state.serve.status().await)
}

/// The arguments of the `stop_serve` command (none).
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct StopServeArgs {}

/// Stops the server and returns its last state.
#[tauri::command(rename_all = "snake_case")]
pub async fn stop_serve(args: StopServeArgs, state: State<'_, AppState>) -> IpcResult<ServeStatus> {
    let StopServeArgs {} = args;
    Ok(state.serve.stop().await?)
}

/// The arguments of the `serve_client_configs` command.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ServeClientConfigsArgs {
    /// The served endpoint.
    pub url: String,
    /// The key clients call as; `null` for `public`.
    pub key_id: Option<String>,
}

/// Every client's remote config for `url`, calling as key `key_id`: written
/// in only while this window still holds the raw key from its mint (and then
/// masked for the page, as the Client config panel does); otherwise
/// referenced, as `gatehouse config --secret-ref` does.
#[tauri::command(rename_all = "snake_case")]
pub fn serve_client_configs(
    args: ServeClientConfigsArgs,
    state: State<'_, AppState>,
) -> Vec<RemoteConfig> {
    let ServeClientConfigsArgs { url, key_id } = args;
    let key = match key_id {
        None => RemoteKey::Public,
        Some(id) => state
            .minted_key(&id)
            .map_or(RemoteKey::Reference, RemoteKey::Raw),
    };
    let mut all = remote::remote_configs(&url, &key);
    for config in all.iter_mut().filter_map(|r| r.config.as_mut()) {
        for snippet in &mut config.snippets {
            snippet.text = mask_keys(&snippet.text);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_core::error::codes;
    use gatehouse_core::site;

    fn state_with_site(toml_tail: &str) -> (tempfile::TempDir, AppState) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        let opened =
            tauri::async_runtime::block_on(site::init(&dir, Some("s"), false, None)).unwrap();
        let file = dir.join(site::SITE_FILE);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("# kept\n{text}{toml_tail}")).unwrap();
        let state = AppState::default();
        state.set_site(opened);
        (tmp, state)
    }

    fn file_of(state: &AppState) -> String {
        std::fs::read_to_string(state.site().unwrap().dir.join(site::SITE_FILE)).unwrap()
    }

    /// Starting keeps the form in `[serve]` before the child runs; what
    /// serve would refuse is neither saved nor started.
    #[test]
    fn start_saves_the_settings_it_starts_with_and_nothing_it_refuses() {
        let (_tmp, state) = state_with_site("\n[serve]\nrate_per_key = 4 # kept too\n");
        let settings = ServeSettings {
            listen: "127.0.0.1:0".into(),
            hosts: vec!["MCP.example.org".into()],
            require_key: true,
            ..ServeSettings::default()
        };
        let spec = prepare_start(&state, "/usr/bin/gatehouse".into(), &settings).unwrap();
        assert!(spec.require_key);
        let text = file_of(&state);
        assert!(text.starts_with("# kept\n"), "{text}");
        assert!(text.contains("rate_per_key = 4 # kept too"), "{text}");
        let loaded = serve_saved(&state);
        assert_eq!(loaded.hosts, ["mcp.example.org"]);
        assert_eq!(loaded.listen, "127.0.0.1:0");
        assert!(loaded.require_key);

        for (hostile, code) in [
            (
                ServeSettings {
                    listen: "0.0.0.0:8808".into(),
                    ..ServeSettings::default()
                },
                codes::LISTEN_UNSAFE,
            ),
            (
                ServeSettings {
                    listen: "127.0.0.1:0".into(),
                    tls_cert: "/c.pem".into(),
                    tls_key: "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".into(),
                    ..ServeSettings::default()
                },
                codes::SERVE_SETTING_SECRET,
            ),
        ] {
            let e = prepare_start(&state, "/usr/bin/gatehouse".into(), &hostile).unwrap_err();
            assert_eq!(e.code, code);
            assert!(!e.message.contains("MIIE"), "{}", e.message);
            assert_eq!(file_of(&state), text);
        }
    }

    fn serve_saved(state: &AppState) -> ServeSettings {
        supervise::saved_settings(&state.site().unwrap().dir).unwrap()
    }

    /// A site whose file has no `[serve]` opens the form on serve's defaults.
    #[test]
    fn a_site_without_serve_loads_the_defaults() {
        let (_tmp, state) = state_with_site("");
        assert_eq!(
            serve_saved(&state),
            ServeSettings {
                listen: "127.0.0.1:8808".into(),
                ..ServeSettings::default()
            }
        );
    }
}
