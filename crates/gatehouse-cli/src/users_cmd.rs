//! `gatehouse users create|list|update|delete`.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::keys::rfc3339;
use gatehouse_core::access::permissions::{format_roles, parse_roles};
use gatehouse_core::site::users;

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
    },
    /// List users.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Change a user's roles (takes effect on a running server's next call).
    Update {
        #[arg(long)]
        email: String,
        #[arg(long)]
        roles: String,
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
    let out = match cmd {
        UsersCommand::Create { email, roles } => {
            let u = users::create(store, CLI_ACTOR, &email, &parse_roles(&roles)?).await?;
            format!(
                "created user {} with roles {}",
                u.email,
                format_roles(&u.roles)
            )
        }
        UsersCommand::List { json } => {
            let list = users::list(store).await?;
            if json {
                to_json(&list)
            } else {
                table(
                    &["email", "roles", "created"],
                    list.iter()
                        .map(|u| {
                            vec![
                                u.email.clone(),
                                format_roles(&u.roles),
                                rfc3339(u.created_at),
                            ]
                        })
                        .collect(),
                )
            }
        }
        UsersCommand::Update { email, roles } => {
            let u = users::set_roles(store, CLI_ACTOR, &email, &parse_roles(&roles)?).await?;
            format!("user {} now has roles {}", u.email, format_roles(&u.roles))
        }
        UsersCommand::Delete { email } => {
            users::delete(store, CLI_ACTOR, &email).await?;
            format!("removed user {email}")
        }
    };
    site.close().await;
    Ok(out)
}
