//! Commands for the Sites screen: open a folder (typed or picked in the
//! native dialog), create a site, and the list of recent sites.

use std::path::PathBuf;

use gatehouse_core::Error;
use gatehouse_core::error::codes;
use gatehouse_core::site::remembered::{BackendInfo, RecentSite};
use gatehouse_core::site::{self, Flags, Settings, Site};
use serde::Serialize;
use tauri::State;
use tauri_plugin_dialog::DialogExt;

use crate::error::IpcResult;
use crate::prefs::Prefs;
use crate::state::AppState;

/// What the page shows about the open site.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct SiteSummary {
    pub path: String,
    pub name: String,
    pub scratch: bool,
    /// The SQLite file or the PostgreSQL URL (never with a password).
    pub backend: BackendInfo,
}

fn path_arg(path: &str, what: &str) -> Result<PathBuf, Error> {
    let path = path.trim();
    if path.is_empty() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            "no folder given",
            format!("enter the path of {what}, or choose one with “Choose folder…”"),
        ));
    }
    let path = PathBuf::from(path);
    // A relative path means whatever folder the app was started from: it
    // was remembered as typed, and reopened another folder next time.
    if !path.is_absolute() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("{} is not a full path", path.display()),
            "give the folder's full path, or choose one",
        ));
    }
    Ok(path)
}

/// Makes `site` the one every screen uses and puts it first among the recent ones.
fn use_site(site: Site, state: &AppState, prefs: &Prefs) -> SiteSummary {
    let summary = SiteSummary {
        path: site.dir.display().to_string(),
        name: site.file.name.clone(),
        scratch: site.is_scratch(),
        backend: BackendInfo::of(&site),
    };
    state.set_site(site);
    let recent = RecentSite {
        path: summary.path.clone(),
        name: summary.name.clone(),
        scratch: summary.scratch,
    };
    if let Err(e) = prefs.update(|r| {
        r.opened(recent);
        Ok(())
    }) {
        // The site is open; only the memory of it failed.
        tracing::warn!(error = %e.message, "cannot remember the recent site");
    }
    summary
}

/// The arguments of the `open_site` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct OpenSiteArgs {
    pub path: String,
}

/// Opens the site in folder `path` and makes it the one every screen uses.
///
/// The database URL comes from the site's `gatehouse.toml` (or its embedded
/// SQLite file); the app takes no `GATEHOUSE_*` environment overrides, so what
/// the window shows is what the folder says.
#[tauri::command(rename_all = "snake_case")]
pub async fn open_site(
    args: OpenSiteArgs,
    state: State<'_, AppState>,
    prefs: State<'_, Prefs>,
) -> IpcResult<SiteSummary> {
    let OpenSiteArgs { path } = args;
    let settings = Settings {
        dir: path_arg(&path, "a site folder")?,
        database_url: None,
    };
    let site = site::open(&settings).await?;
    Ok(use_site(site, &state, &prefs))
}

/// The arguments of the `create_site` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CreateSiteArgs {
    pub path: String,
    pub name: Option<String>,
    pub scratch: bool,
}

/// Creates a site in folder `path` (made if missing, refused if it already
/// holds one) and opens it. `scratch` sites get sample data and allow
/// synthetic role actors; the others start empty.
#[tauri::command(rename_all = "snake_case")]
pub async fn create_site(
    args: CreateSiteArgs,
    state: State<'_, AppState>,
    prefs: State<'_, Prefs>,
) -> IpcResult<SiteSummary> {
    let CreateSiteArgs {
        path,
        name,
        scratch,
    } = args;
    let dir = path_arg(&path, "the new site's folder")?;
    let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let site = site::init(&dir, name, scratch, None).await?;
    Ok(use_site(site, &state, &prefs))
}

/// The arguments of the `pick_folder` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PickFolderArgs {
    pub title: String,
}

/// Asks for a folder with the native picker; `None` when cancelled.
///
/// The dialog runs on the Rust side, so the page needs no dialog permission
/// and cannot open pickers with options of its own.
#[tauri::command(rename_all = "snake_case")]
pub async fn pick_folder(args: PickFolderArgs, app: tauri::AppHandle) -> IpcResult<Option<String>> {
    let PickFolderArgs { title } = args;
    let title = title.trim();
    let title = if title.is_empty() || title.chars().count() > 80 {
        "Choose a folder"
    } else {
        title
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_title(title)
        .pick_folder(move |picked| {
            let _ = tx.send(picked);
        });
    let picked = rx.await.ok().flatten();
    Ok(picked
        .and_then(|p| p.into_path().ok())
        .map(|p| p.display().to_string()))
}

/// The arguments of the `recent_sites` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RecentSitesArgs {}

/// The recent sites, newest first (the first is reopened at start).
#[tauri::command(rename_all = "snake_case")]
pub fn recent_sites(args: RecentSitesArgs, prefs: State<'_, Prefs>) -> Vec<RecentSite> {
    let RecentSitesArgs {} = args;
    prefs.get().recent_sites
}

/// The arguments of the `forget_site` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ForgetSiteArgs {
    pub path: String,
}

/// Drops `path` from the recent sites.
#[tauri::command(rename_all = "snake_case")]
pub fn forget_site(args: ForgetSiteArgs, prefs: State<'_, Prefs>) -> IpcResult<Vec<RecentSite>> {
    let ForgetSiteArgs { path } = args;
    Ok(prefs.update(|r| {
        r.forget(&path);
        Ok(r.recent_sites.clone())
    })?)
}

/// The arguments of the `default_site_path` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DefaultSitePathArgs {}

/// The folder the site field starts with: `GATEHOUSE_SITE`, else the current
/// directory, resolved by the same function as the CLI's `--site`.
#[tauri::command(rename_all = "snake_case")]
pub fn default_site_path(args: DefaultSitePathArgs) -> IpcResult<String> {
    let DefaultSitePathArgs {} = args;
    let settings = Settings::resolve(&Flags::default(), gatehouse_core::host_env::host_var)?;
    Ok(settings.dir.display().to_string())
}
