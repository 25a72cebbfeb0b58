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

/// The arguments of the `list_users` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ListUsersArgs {}

#[tauri::command(rename_all = "snake_case")]
pub async fn list_users(args: ListUsersArgs, state: State<'_, AppState>) -> IpcResult<Vec<User>> {
    let ListUsersArgs {} = args;
    let site = state.site()?;
    Ok(users::list(&site.store).await?)
}

/// The arguments of the `create_user` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CreateUserArgs {
    pub email: String,
    pub roles: Vec<String>,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn create_user(args: CreateUserArgs, state: State<'_, AppState>) -> IpcResult<User> {
    let CreateUserArgs { email, roles } = args;
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    Ok(users::create(&site.store, DESKTOP_ACTOR, &email, &roles).await?)
}

/// The arguments of the `set_user_roles` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SetUserRolesArgs {
    pub email: String,
    pub roles: Vec<String>,
}

#[tauri::command(rename_all = "snake_case")]
pub async fn set_user_roles(args: SetUserRolesArgs, state: State<'_, AppState>) -> IpcResult<User> {
    let SetUserRolesArgs { email, roles } = args;
    let site = state.site()?;
    let roles = parse_roles(&roles.join(","))?;
    Ok(users::set_roles(&site.store, DESKTOP_ACTOR, &email, &roles).await?)
}

/// The arguments of the `set_user_disabled` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct SetUserDisabledArgs {
    pub email: String,
    pub disabled: bool,
}

/// Disables (`disabled` true) or enables user `email`.
#[tauri::command(rename_all = "snake_case")]
pub async fn set_user_disabled(
    args: SetUserDisabledArgs,
    state: State<'_, AppState>,
) -> IpcResult<User> {
    let SetUserDisabledArgs { email, disabled } = args;
    let site = state.site()?;
    Ok(if disabled {
        users::disable(&site.store, DESKTOP_ACTOR, &email).await?
    } else {
        users::enable(&site.store, DESKTOP_ACTOR, &email).await?
    })
}

/// The arguments of the `permission_table` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PermissionTableArgs {}

/// Core's permission table, in its order.
#[tauri::command(rename_all = "snake_case")]
pub fn permission_table(args: PermissionTableArgs) -> Vec<PermissionRow> {
    let PermissionTableArgs {} = args;
    permissions::Action::all()
        .map(|action| PermissionRow {
            action: action.as_str().to_string(),
            description: action.what(),
            min_role: action.min_role(),
        })
        .collect()
}
