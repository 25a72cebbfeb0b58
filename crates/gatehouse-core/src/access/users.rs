//! Site users: real accounts whose roles come from the store.

use serde::Serialize;

use crate::access::audit::{self, AuditEntry};
use crate::access::audit::{AuditAction, AuditActor};
use crate::access::permissions::{Role, format_roles, parse_roles};
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::store::oauth as oauth_sql;
use crate::store::users as sql;
use crate::time::now_ms;

/// A user; times are Unix milliseconds, RFC 3339 text when serialized.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct User {
    pub email: String,
    pub roles: Vec<Role>,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub created_at: i64,
    #[serde(serialize_with = "crate::time::as_rfc3339")]
    #[ts(type = "string")]
    pub updated_at: i64,
    /// When an admin disabled the user (who then resolves as no actor at
    /// all); `null` while enabled.
    #[serde(serialize_with = "crate::time::as_rfc3339_opt")]
    #[ts(type = "string | null")]
    pub disabled_at: Option<i64>,
}

impl User {
    pub fn is_disabled(&self) -> bool {
        self.disabled_at.is_some()
    }
}

fn to_user(row: sql::UserRow) -> Result<User> {
    Ok(User {
        roles: parse_roles(&row.roles)?,
        email: row.email,
        created_at: row.created_at,
        updated_at: row.updated_at,
        disabled_at: row.disabled_at,
    })
}

/// Checks an email's shape: one `@`, non-empty local part and domain, no spaces.
pub fn check_email(email: &str) -> Result<String> {
    let email = email.trim();
    let ok = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && matches!(email.split_once('@'), Some((local, domain)) if !local.is_empty() && !domain.is_empty() && !domain.contains('@'));
    if !ok {
        return Err(Error::invalid(
            codes::EMAIL_INVALID,
            format!("{email:?} is not an email address"),
            "use the form name@example.com",
        ));
    }
    crate::text::check_no_disguise(
        "email address",
        email,
        codes::EMAIL_INVALID,
        "retype the address without direction-changing or invisible characters",
    )?;
    Ok(email.to_string())
}

pub async fn create(store: &Store, actor: &str, email: &str, roles: &[Role]) -> Result<User> {
    let email = check_email(email)?;
    let roles_text = format_roles(roles);
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    sql::insert(&mut tx, &email, &roles_text, now).await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::UserCreate,
            subject: &email,
            detail: serde_json::json!({"roles": roles_text}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a new user", e))?;
    Ok(User {
        email,
        roles: roles.to_vec(),
        created_at: now,
        updated_at: now,
        disabled_at: None,
    })
}

fn unknown(email: &str) -> Error {
    Error::new(codes::USER_NOT_FOUND, format!("no user with email {email}"))
        .hint("`gatehouse users list` shows the users")
}

pub async fn set_roles(store: &Store, actor: &str, email: &str, roles: &[Role]) -> Result<User> {
    let roles_text = format_roles(roles);
    let mut tx = store.begin_write().await?;
    if !sql::set_roles(&mut tx, email, &roles_text, now_ms()).await? {
        return Err(unknown(email));
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::UserSetRoles,
            subject: email,
            detail: serde_json::json!({"roles": roles_text}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a role change", e))?;
    get(store, email).await?.ok_or_else(|| unknown(email))
}

/// Disables a user: the account stays (with its history) but no longer
/// resolves as an actor, in this process or any other (the access
/// generation moves, so running servers re-read it on their next call).
pub async fn disable(store: &Store, actor: &str, email: &str) -> Result<User> {
    set_disabled(store, actor, email, true).await
}

/// Enables a disabled user again.
pub async fn enable(store: &Store, actor: &str, email: &str) -> Result<User> {
    set_disabled(store, actor, email, false).await
}

async fn set_disabled(store: &Store, actor: &str, email: &str, disabled: bool) -> Result<User> {
    let now = now_ms();
    let mut tx = store.begin_write().await?;
    if !sql::set_disabled(&mut tx, email, disabled.then_some(now), now).await? {
        drop(tx);
        let user = get(store, email).await?.ok_or_else(|| unknown(email))?;
        let state = if user.is_disabled() {
            "disabled"
        } else {
            "enabled"
        };
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("user {} is already {state}", user.email),
            "nothing to do",
        ));
    }
    let (action, detail) = if disabled {
        let ended =
            oauth_sql::end_user_authorizations(&mut tx, email, now, "the user was disabled")
                .await?;
        (
            AuditAction::UserDisable,
            serde_json::json!({"grants_revoked": ended}),
        )
    } else {
        (AuditAction::UserEnable, serde_json::json!({}))
    };
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action,
            subject: email,
            detail,
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a user's disabled state", e))?;
    get(store, email).await?.ok_or_else(|| unknown(email))
}

/// The refusal for a disabled user, wherever an actor is resolved.
pub fn disabled_error(email: &str) -> Error {
    Error::new(codes::USER_DISABLED, format!("user {email} is disabled")).hint(format!(
        "an admin can enable the user again on the Users screen or with `gatehouse users enable --email {email}`"
    ))
}

pub async fn delete(store: &Store, actor: &str, email: &str) -> Result<()> {
    let mut tx = store.begin_write().await?;
    if !sql::delete(&mut tx, email).await? {
        return Err(unknown(email));
    }
    let ended =
        oauth_sql::end_user_authorizations(&mut tx, email, now_ms(), "the user was removed")
            .await?;
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::UserDelete,
            subject: email,
            detail: serde_json::json!({"grants_revoked": ended}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a user removal", e))?;
    Ok(())
}

pub async fn get(store: &Store, email: &str) -> Result<Option<User>> {
    sql::by_email(store, email).await?.map(to_user).transpose()
}

pub async fn list(store: &Store) -> Result<Vec<User>> {
    sql::list(store).await?.into_iter().map(to_user).collect()
}

/// What anonymous readers see for an author who set no display name (and for
/// keys and synthetic actors, whose labels are for the admin only).
pub const ANONYMOUS_AUTHOR: &str = "site author";

/// Display names: 1–80 printable characters, no bidirectional controls.
pub fn check_display_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 80 || name.chars().any(char::is_control) {
        return Err(Error::invalid(
            codes::DISPLAY_NAME_INVALID,
            "a display name must be 1 to 80 printable characters",
            "give the name readers should see, e.g. --display-name \"Ada L.\"",
        ));
    }
    crate::text::check_no_disguise(
        "display name",
        name,
        codes::DISPLAY_NAME_INVALID,
        "retype the name without direction-changing or invisible characters",
    )?;
    Ok(name.to_string())
}

/// Sets or clears (`None`) the name anonymous readers see for this user.
pub async fn set_display_name(
    store: &Store,
    actor: &str,
    email: &str,
    name: Option<&str>,
) -> Result<()> {
    let name = name.map(check_display_name).transpose()?;
    let mut tx = store.begin_write().await?;
    if !sql::set_display_name(&mut tx, email, name.as_deref(), now_ms()).await? {
        return Err(unknown(email));
    }
    audit::append(
        &mut tx,
        AuditEntry {
            actor,
            action: AuditAction::UserSetDisplayName,
            subject: email,
            detail: serde_json::json!({"display_name": name}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing a display name", e))?;
    Ok(())
}

/// The public form of an author label (`user:<email>`, `key:<id>`, …): the
/// user's display name, or [`ANONYMOUS_AUTHOR`]; never an email or a key id.
pub async fn public_name(store: &Store, author_label: &str) -> Result<String> {
    if let Some(email) = label_email(author_label)
        && let Some(name) = sql::display_name(store, email).await?
    {
        return Ok(name);
    }
    Ok(ANONYMOUS_AUTHOR.to_string())
}

/// The email an author label names: labels are `user:<email>`; entries
/// seeded or imported may hold a bare email.
fn label_email(author_label: &str) -> Option<&str> {
    author_label
        .strip_prefix(AuditActor::USER_PREFIX)
        .or_else(|| author_label.contains('@').then_some(author_label))
}

/// [`public_name`] from the display name a statement joined beside the entry
/// (`store::content::by_slug_named`: `users.email_norm = lower(email part)`),
/// or `None` when that join cannot stand for the lookup and [`public_name`]
/// must run: SQL's `lower()` folds ASCII letters only and trims nothing, so
/// the two agree exactly when the email part is ASCII without surrounding
/// whitespace (the stored form `email.trim().to_lowercase()` then equals it).
pub fn public_name_joined(author_label: &str, joined: Option<String>) -> Option<String> {
    match label_email(author_label) {
        Some(email) if !email.is_ascii() || email.trim() != email => None,
        _ => Some(joined.unwrap_or_else(|| ANONYMOUS_AUTHOR.to_string())),
    }
}
