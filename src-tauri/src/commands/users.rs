//! Commands for the Users screen: list, create, change roles, disable and
//! enable, and the permission table that says what each role allows.

use gatehouse_core::access::permissions::{self, Role, parse_roles};
use gatehouse_core::access::users::{self, User};
use serde::Serialize;
use tauri::State;

use crate::commands::keys::DESKTOP_ACTOR;
use crate::error::IpcResult;
use crate::state::AppState;

/// One row of core's permission table.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct PermissionRow {
    pub action: String,
    pub description: &'static str,
    /// The lowest role allowed; every higher role is too.
    pub min_role: Role,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn list_users(state: State<'_, AppState>) -> IpcResult<Vec<User>> {
    let site = state.site()?;
    Ok(users::list(&site.store).await?)
}

#[tauri::command(rename_all = "snake_case")]
pub async fn create_user(
    email: String,
    roles: Vec<String>,
    state: State<'_, AppState>,
) -> IpcResult<User> {
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    Ok(users::create(&site.store, DESKTOP_ACTOR, &email, &roles).await?)
}

#[tauri::command(rename_all = "snake_case")]
pub async fn set_user_roles(
    email: String,
    roles: Vec<String>,
    state: State<'_, AppState>,
) -> IpcResult<User> {
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    Ok(users::set_roles(&site.store, DESKTOP_ACTOR, &email, &roles).await?)
}

/// Disables (`disabled` true) or enables user `email`.
#[tauri::command(rename_all = "snake_case")]
pub async fn set_user_disabled(
    email: String,
    disabled: bool,
    state: State<'_, AppState>,
) -> IpcResult<User> {
    let site = state.site()?;
    Ok(if disabled {
        users::disable(&site.store, DESKTOP_ACTOR, &email).await?
    } else {
        users::enable(&site.store, DESKTOP_ACTOR, &email).await?
    })
}

/// Core's permission table, in its order.
#[tauri::command(rename_all = "snake_case")]
pub fn permission_table() -> Vec<PermissionRow> {
    permissions::Action::all()
        .map(|action| PermissionRow {
            action: action.as_str().to_string(),
            description: action.what(),
            min_role: action.min_role(),
        })
        .collect()
}
