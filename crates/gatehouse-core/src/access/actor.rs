//! Who a process runs as, resolved once by [`resolve`] from exactly one of
//! `--email`, `--role`, `--api-key` / `GATEHOUSE_API_KEY`, or nothing (the
//! anonymous `public` actor). A bad key refuses; it never falls back to public.
//! A long-running server calls [`refresh`] before every action, so role changes
//! and revocations take effect on the next call.

use serde::Serialize;

use crate::access::keys::{self, RawKey};
use crate::access::permissions::{Action, Role, parse_roles};
use crate::error::{Error, Result, codes};
use crate::site::Site;
use crate::site::users;

pub const ENV_API_KEY: &str = "GATEHOUSE_API_KEY";

/// The actor flags as given. `env_api_key` is `GATEHOUSE_API_KEY`, if set.
#[derive(Debug, Clone, Default)]
pub struct ActorFlags {
    pub email: Option<String>,
    pub role: Option<String>,
    pub api_key: Option<RawKey>,
    pub env_api_key: Option<RawKey>,
}

impl ActorFlags {
    /// Reads `GATEHOUSE_API_KEY` from the process environment.
    pub fn with_env(mut self) -> Self {
        self.env_api_key = std::env::var(ENV_API_KEY).ok().map(RawKey::new);
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    Public,
    User,
    Synthetic,
    ApiKey,
}

/// A resolved actor, as `gatehouse whoami --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    pub kind: ActorKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    pub roles: Vec<Role>,
}

impl Actor {
    pub fn public() -> Actor {
        Actor {
            kind: ActorKind::Public,
            email: None,
            key_id: None,
            roles: vec![Role::Public],
        }
    }

    /// Whether the actor authenticated (anything but anonymous `public`).
    pub fn is_authenticated(&self) -> bool {
        self.kind != ActorKind::Public
    }

    /// How the actor appears in the audit log; never holds a secret.
    pub fn label(&self) -> String {
        match self.kind {
            ActorKind::Public => "public".to_string(),
            ActorKind::User => format!("user:{}", self.email.as_deref().unwrap_or("?")),
            ActorKind::Synthetic => format!(
                "synthetic:{}",
                crate::access::permissions::format_roles(&self.roles)
            ),
            ActorKind::ApiKey => format!("key:{}", self.key_id.as_deref().unwrap_or("?")),
        }
    }

    pub fn may(&self, action: Action) -> bool {
        crate::access::permissions::allowed(&self.roles, action)
    }

    pub fn check(&self, action: Action) -> Result<()> {
        crate::access::permissions::check(&self.roles, action)
    }
}

/// Resolves the actor from exactly one source.
pub async fn resolve(site: &Site, flags: &ActorFlags) -> Result<Actor> {
    let key = match (&flags.api_key, &flags.env_api_key) {
        (Some(k), _) => Some(k),
        (None, Some(k)) => Some(k),
        (None, None) => None,
    };
    let mut given = Vec::new();
    if flags.email.is_some() {
        given.push("--email");
    }
    if flags.role.is_some() {
        given.push("--role");
    }
    if flags.api_key.is_some() {
        given.push("--api-key");
    } else if flags.env_api_key.is_some() {
        given.push("GATEHOUSE_API_KEY");
    }
    if given.len() > 1 {
        return Err(Error::new(codes::ACTOR_FLAGS_CONFLICT, format!("more than one actor given: {}", given.join(", ")))
            .hint("run as exactly one actor: --email, --role or an API key (unset GATEHOUSE_API_KEY to use --email or --role)")
            .detail(serde_json::json!({"given": given})));
    }
    if let Some(email) = &flags.email {
        let user = users::get(&site.store, email)
            .await?
            .ok_or_else(|| unknown_email(email))?;
        return Ok(Actor {
            kind: ActorKind::User,
            email: Some(user.email),
            key_id: None,
            roles: user.roles,
        });
    }
    if let Some(role) = &flags.role {
        if !site.is_scratch() {
            return Err(Error::new(codes::ACTOR_ROLE_NOT_SCRATCH, "--role is only allowed on a scratch site")
                .hint("use --email for a real user or an API key; scratch sites are made with `gatehouse site init DIR --scratch`"));
        }
        let roles = parse_roles(role)?;
        return Ok(Actor {
            kind: ActorKind::Synthetic,
            email: None,
            key_id: None,
            roles,
        });
    }
    if let Some(key) = key {
        let verified = keys::verify(&site.store, key).await?;
        return Ok(Actor {
            kind: ActorKind::ApiKey,
            email: None,
            key_id: Some(verified.id),
            roles: verified.roles,
        });
    }
    Ok(Actor::public())
}

fn unknown_email(email: &str) -> Error {
    Error::new(
        codes::ACTOR_EMAIL_UNKNOWN,
        format!("no user with email {email}"),
    )
    .hint(format!(
        "create the user first: gatehouse users create --email {email} --roles viewer"
    ))
}

/// The actor as it stands now in the store: current roles for a user or key,
/// and the refusal if the user was removed or the key revoked or expired.
pub async fn refresh(site: &Site, actor: &Actor) -> Result<Actor> {
    match actor.kind {
        ActorKind::Public | ActorKind::Synthetic => Ok(actor.clone()),
        ActorKind::User => {
            let email = actor.email.as_deref().unwrap_or_default();
            let user = users::get(&site.store, email)
                .await?
                .ok_or_else(|| unknown_email(email))?;
            Ok(Actor {
                roles: user.roles,
                ..actor.clone()
            })
        }
        ActorKind::ApiKey => {
            let id = actor.key_id.as_deref().unwrap_or_default();
            let key = keys::recheck(&site.store, id).await?;
            Ok(Actor {
                roles: key.roles,
                ..actor.clone()
            })
        }
    }
}

/// [`refresh`] for a long-running server, at the cost of one cheap read per
/// call: the store's access generation (`store::access`) moves with every
/// change to keys and users, in any process, so while it stands still the
/// actor last read is still the actor. A key's expiry is checked against the
/// clock on every call, since time passing moves no counter.
#[derive(Debug)]
pub struct Refresher {
    identity: Actor,
    cached: std::sync::Mutex<Option<Cached>>,
}

#[derive(Debug, Clone)]
struct Cached {
    generation: i64,
    actor: Actor,
    expires_at: Option<i64>,
}

impl Refresher {
    /// Re-reads `identity` (as resolved at startup) on the calls that need it.
    pub fn new(identity: Actor) -> Refresher {
        Refresher {
            identity,
            cached: std::sync::Mutex::new(None),
        }
    }

    /// Who the actor was at startup: whom to re-read, never what they may do.
    pub fn identity(&self) -> &Actor {
        &self.identity
    }

    /// The actor as the store has it now (see [`refresh`]).
    pub async fn refresh(&self, site: &Site) -> Result<Actor> {
        if matches!(self.identity.kind, ActorKind::Public | ActorKind::Synthetic) {
            return Ok(self.identity.clone());
        }
        // Read before the full refresh: a change committed in between moves
        // the generation past this one, so the next call refreshes again.
        let generation = crate::store::access::generation(&site.store).await?;
        let now = crate::store::now_ms();
        if let Some(c) = self.cached.lock().expect("lock").as_ref()
            && c.generation == generation
            && c.expires_at.is_none_or(|e| e > now)
        {
            return Ok(c.actor.clone());
        }
        let (actor, expires_at) = match self.identity.kind {
            ActorKind::ApiKey => {
                let id = self.identity.key_id.as_deref().unwrap_or_default();
                let key = keys::recheck(&site.store, id).await;
                let key = key.inspect_err(|_| *self.cached.lock().expect("lock") = None)?;
                let actor = Actor {
                    roles: key.roles,
                    ..self.identity.clone()
                };
                (actor, key.expires_at)
            }
            _ => {
                let actor = refresh(site, &self.identity).await;
                let actor = actor.inspect_err(|_| *self.cached.lock().expect("lock") = None)?;
                (actor, None)
            }
        };
        *self.cached.lock().expect("lock") = Some(Cached {
            generation,
            actor: actor.clone(),
            expires_at,
        });
        Ok(actor)
    }
}
