//! Commands that edit the site's stored connections and record consent to
//! spawn them. Inputs are validated in core (`saved::validate`, through
//! [`DefinitionForm::into_saved`]); an invalid field comes back as an error
//! whose detail names the field, so the form shows it there.

use gatehouse_core::connections::consent::{self, ConsentRequest};
use gatehouse_core::connections::form::DefinitionForm;
use gatehouse_core::connections::registry::LiveState;
use gatehouse_core::connections::saved;
use gatehouse_core::sandbox::Profile;
use gatehouse_core::time::now_ms;
use tauri::State;

use super::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

/// The arguments of the `connection_form` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ConnectionFormArgs {
    pub name: String,
}

/// Stored connection `name` as the form shows it (secrets as host variable names).
#[tauri::command(rename_all = "snake_case")]
pub async fn connection_form(
    args: ConnectionFormArgs,
    state: State<'_, AppState>,
) -> IpcResult<DefinitionForm> {
    let ConnectionFormArgs { name } = args;
    let site = state.site()?;
    Ok(DefinitionForm::of(&saved::get(&site.store, &name).await?))
}

/// The arguments of the `save_connection` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SaveConnectionArgs {
    pub original: Option<String>,
    pub form: DefinitionForm,
}

/// Stores `form` as a new connection (`original` absent) or in place of
/// connection `original` (its isolation profile and inactivity timeout kept).
/// Returns the name stored.
#[tauri::command(rename_all = "snake_case")]
pub async fn save_connection(
    args: SaveConnectionArgs,
    state: State<'_, AppState>,
) -> IpcResult<String> {
    let SaveConnectionArgs { original, form } = args;
    let site = state.site()?;
    let conn = match &original {
        None => {
            let conn = form.into_saved(Profile::default(), None, now_ms())?;
            saved::add(&site.store, DESKTOP_ACTOR, &conn).await?;
            conn
        }
        Some(old) => {
            let before = saved::get(&site.store, old).await?;
            let conn = form.into_saved(
                before.limits.sandbox,
                before.limits.inactivity_ms,
                before.created_at,
            )?;
            saved::update(&site.store, DESKTOP_ACTOR, old, &conn).await?;
            conn
        }
    };
    Ok(conn.name)
}

/// The arguments of the `duplicate_connection` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DuplicateConnectionArgs {
    pub name: String,
    pub new_name: String,
}

/// Copies connection `name` as `new_name` (a new definition: it asks for consent).
#[tauri::command(rename_all = "snake_case")]
pub async fn duplicate_connection(
    args: DuplicateConnectionArgs,
    state: State<'_, AppState>,
) -> IpcResult<String> {
    let DuplicateConnectionArgs { name, new_name } = args;
    let site = state.site()?;
    Ok(
        saved::duplicate(&site.store, DESKTOP_ACTOR, &name, &new_name)
            .await?
            .name,
    )
}

/// The arguments of the `remove_connection` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct RemoveConnectionArgs {
    pub name: String,
}

/// Removes connection `name`, closing it first if it runs here.
#[tauri::command(rename_all = "snake_case")]
pub async fn remove_connection(
    args: RemoveConnectionArgs,
    state: State<'_, AppState>,
) -> IpcResult<()> {
    let RemoveConnectionArgs { name } = args;
    let site = state.site()?;
    saved::get(&site.store, &name).await?;
    state.connections.close(&name).await;
    saved::remove(&site.store, DESKTOP_ACTOR, &name).await?;
    Ok(())
}

/// The arguments of the `consent_request` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ConsentRequestArgs {
    pub name: String,
}

/// What the consent dialog shows for connection `name` (values masked).
#[tauri::command(rename_all = "snake_case")]
pub async fn consent_request(
    args: ConsentRequestArgs,
    state: State<'_, AppState>,
) -> IpcResult<ConsentRequest> {
    let ConsentRequestArgs { name } = args;
    let site = state.site()?;
    let conn = saved::get(&site.store, &name).await?;
    Ok(consent::request(&site, &conn).await?)
}

/// The arguments of the `approve_tools` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ApproveToolsArgs {
    pub name: String,
}

/// Approves the tool change connection `name` was refused for or is held
/// for (the list shown, audited as `connection.tools_approved` by the
/// desktop); one running here goes on with that list (`saved::approve_live`).
#[tauri::command(rename_all = "snake_case")]
pub async fn approve_tools(args: ApproveToolsArgs, state: State<'_, AppState>) -> IpcResult<()> {
    let ApproveToolsArgs { name } = args;
    let site = state.site()?;
    let running = state
        .connections
        .get(&name)
        .filter(|l| l.state() == LiveState::Connected);
    match running {
        Some(live) => saved::approve_live(&site, DESKTOP_ACTOR, &name, &live.conn).await?,
        None => saved::approve(&site.store, DESKTOP_ACTOR, &name).await?,
    };
    Ok(())
}

/// The arguments of the `grant_consent` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct GrantConsentArgs {
    pub name: String,
    pub definition_sha256: String,
}

/// Records consent to spawn connection `name` as shown (`definition_sha256`
/// from the dialog; `CONSENT_STALE` if it changed since).
#[tauri::command(rename_all = "snake_case")]
pub async fn grant_consent(args: GrantConsentArgs, state: State<'_, AppState>) -> IpcResult<()> {
    let GrantConsentArgs {
        name,
        definition_sha256,
    } = args;
    let site = state.site()?;
    consent::grant(&site.store, DESKTOP_ACTOR, &name, &definition_sha256).await?;
    Ok(())
}
