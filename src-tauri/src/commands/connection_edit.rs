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

/// Stored connection `name` as the form shows it (secrets as host variable names).
#[tauri::command(rename_all = "snake_case")]
pub async fn connection_form(
    name: String,
    state: State<'_, AppState>,
) -> IpcResult<DefinitionForm> {
    let site = state.site()?;
    Ok(DefinitionForm::of(&saved::get(&site.store, &name).await?))
}

/// Stores `form` as a new connection (`original` absent) or in place of
/// connection `original` (its isolation profile and inactivity timeout kept).
/// Returns the name stored.
#[tauri::command(rename_all = "snake_case")]
pub async fn save_connection(
    original: Option<String>,
    form: DefinitionForm,
    state: State<'_, AppState>,
) -> IpcResult<String> {
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

/// Copies connection `name` as `new_name` (a new definition: it asks for consent).
#[tauri::command(rename_all = "snake_case")]
pub async fn duplicate_connection(
    name: String,
    new_name: String,
    state: State<'_, AppState>,
) -> IpcResult<String> {
    let site = state.site()?;
    Ok(
        saved::duplicate(&site.store, DESKTOP_ACTOR, &name, &new_name)
            .await?
            .name,
    )
}

/// Removes connection `name`, closing it first if it runs here.
#[tauri::command(rename_all = "snake_case")]
pub async fn remove_connection(name: String, state: State<'_, AppState>) -> IpcResult<()> {
    let site = state.site()?;
    saved::get(&site.store, &name).await?;
    state.connections.close(&name).await;
    saved::remove(&site.store, DESKTOP_ACTOR, &name).await?;
    Ok(())
}

/// What the consent dialog shows for connection `name` (values masked).
#[tauri::command(rename_all = "snake_case")]
pub async fn consent_request(
    name: String,
    state: State<'_, AppState>,
) -> IpcResult<ConsentRequest> {
    let site = state.site()?;
    let conn = saved::get(&site.store, &name).await?;
    Ok(consent::request(&site, &conn).await?)
}

/// Approves the tool change connection `name` was refused for or is held
/// for (the list shown, audited as `connection.tools_approved` by the
/// desktop); one running here goes on with that list (`saved::approve_live`).
#[tauri::command(rename_all = "snake_case")]
pub async fn approve_tools(name: String, state: State<'_, AppState>) -> IpcResult<()> {
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

/// Records consent to spawn connection `name` as shown (`definition_sha256`
/// from the dialog; `CONSENT_STALE` if it changed since).
#[tauri::command(rename_all = "snake_case")]
pub async fn grant_consent(
    name: String,
    definition_sha256: String,
    state: State<'_, AppState>,
) -> IpcResult<()> {
    let site = state.site()?;
    consent::grant(&site.store, DESKTOP_ACTOR, &name, &definition_sha256).await?;
    Ok(())
}
