//! `gatehouse users create|list|update|disable|enable|delete`.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::keys::rfc3339;
use gatehouse_core::access::permissions::{format_roles, parse_roles};
use gatehouse_core::access::users;

use crate::Ctx;
use crate::keys_cmd::CLI_ACTOR;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Create a user.
    Create {
        #[arg(long)]
        email: String,
        /// Comma-separated: viewer, author, editor, admin.
        #[arg(long)]
        roles: String,
        /// The name anonymous readers see on this user's entries.
        #[arg(long)]
        display_name: Option<String>,
    },
    /// List users.
    List,
    /// Change a user's roles (takes effect on a running server's next call)
    /// or display name.
    Update {
        #[arg(long)]
        email: String,
        #[arg(long, required_unless_present_any = ["display_name", "clear_display_name"])]
        roles: Option<String>,
        /// The name anonymous readers see on this user's entries.
        #[arg(long, conflicts_with = "clear_display_name")]
        display_name: Option<String>,
        /// Readers see "site author" again.
        #[arg(long)]
        clear_display_name: bool,
    },
    /// Disable a user: it keeps its history but no longer resolves as an actor.
    Disable {
        #[arg(long)]
        email: String,
    },
    /// Enable a disabled user again.
    Enable {
        #[arg(long)]
        email: String,
    },
    /// Remove a user.
    Delete {
        #[arg(long)]
        email: String,
    },
}

pub async fn run(ctx: &Ctx, cmd: UsersCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let json = ctx.json;
    let out = match cmd {
        UsersCommand::Create {
            email,
            roles,
            display_name,
        } => {
            let roles = parse_roles(&roles)?;
            if let Some(name) = &display_name {
                users::check_display_name(name)?;
            }
            let u = users::create(store, CLI_ACTOR, &email, &roles).await?;
            if let Some(name) = &display_name {
                users::set_display_name(store, CLI_ACTOR, &u.email, Some(name)).await?;
            }
            format!(
                "created user {} with roles {}",
                u.email,
                format_roles(&u.roles)
            )
        }
        UsersCommand::List => {
            let list = users::list(store).await?;
            if json {
                to_json(&list)
            } else {
                table(
                    &["email", "roles", "created", "state"],
                    list.iter()
                        .map(|u| {
                            vec![
                                u.email.clone(),
                                format_roles(&u.roles),
                                rfc3339(u.created_at),
                                if u.is_disabled() {
                                    "disabled"
                                } else {
                                    "enabled"
                                }
                                .to_string(),
                            ]
                        })
                        .collect(),
                )
            }
        }
        UsersCommand::Update {
            email,
            roles,
            display_name,
            clear_display_name,
        } => {
            // Check everything before changing anything.
            let roles = roles.as_deref().map(parse_roles).transpose()?;
            if let Some(name) = &display_name {
                users::check_display_name(name)?;
            }
            let mut said = Vec::new();
            if display_name.is_some() || clear_display_name {
                users::set_display_name(store, CLI_ACTOR, &email, display_name.as_deref()).await?;
                said.push(match &display_name {
                    Some(n) => format!("user {email} is shown as {n:?}"),
                    None => format!("user {email} is shown as {:?}", users::ANONYMOUS_AUTHOR),
                });
            }
            if let Some(roles) = roles {
                let u = users::set_roles(store, CLI_ACTOR, &email, &roles).await?;
                said.push(format!(
                    "user {} now has roles {}",
                    u.email,
                    format_roles(&u.roles)
                ));
            }
            said.join(
                "
",
            )
        }
        UsersCommand::Disable { email } => {
            let u = users::disable(store, CLI_ACTOR, &email).await?;
            format!("disabled user {}", u.email)
        }
        UsersCommand::Enable { email } => {
            let u = users::enable(store, CLI_ACTOR, &email).await?;
            format!("enabled user {}", u.email)
        }
        UsersCommand::Delete { email } => {
            users::delete(store, CLI_ACTOR, &email).await?;
            format!("removed user {email}")
        }
    };
    site.close().await;
    Ok(out)
}
