//! Who a process runs as, resolved once by [`resolve`] from exactly one of
//! `--email`, `--role`, `--api-key` / `GATEHOUSE_API_KEY`, or nothing (the
//! anonymous `public` actor). A bad key refuses; it never falls back to public.
//! A long-running server calls [`refresh`] before every action, so role changes
//! and revocations take effect on the next call.

use serde::Serialize;

use crate::access::audit::AuditActor;
use crate::access::keys::{self, RawKey};
use crate::access::permissions::{Action, Role, parse_roles};
use crate::access::restrictions::{ContentScope, Restrictions};
use crate::access::users;
use crate::error::{Error, Result, codes};
use crate::store::Store;
use crate::sync::lock;

pub const ENV_API_KEY: &str = "GATEHOUSE_API_KEY";

/// The actor flags as given. `env_api_key` is `GATEHOUSE_API_KEY`, if set.
#[derive(Debug, Clone, Default)]
pub struct ActorFlags {
    pub email: Option<String>,
    pub role: Option<String>,
    pub api_key: Option<RawKey>,
    pub env_api_key: Option<RawKey>,
    /// A key by its id, without its secret (`--key-id`): what an admin
    /// previews. It grants nothing `--email` does not already: both need
    /// the site's database, which is the credential here.
    pub key_id: Option<String>,
}

/// The one actor source the flags name, see [`ActorFlags::source`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorSource<'a> {
    Email(&'a str),
    Roles(&'a str),
    /// `--api-key`, else `GATEHOUSE_API_KEY`.
    ApiKey(&'a RawKey),
    /// `--key-id`.
    KeyId(&'a str),
}

impl ActorFlags {
    /// Reads `GATEHOUSE_API_KEY` (taken out of the environment at start, see
    /// [`crate::host_env::take_host_secrets`]).
    pub fn with_env(mut self) -> Self {
        self.env_api_key = crate::host_env::host_var(ENV_API_KEY).map(RawKey::new);
        self
    }

    /// The one-actor rule: at most one of `--email`, `--role` and an API key
    /// (`--api-key`, else `GATEHOUSE_API_KEY`); `None` when none is given.
    pub fn source(&self) -> Result<Option<ActorSource<'_>>> {
        let mut given = Vec::new();
        if self.email.is_some() {
            given.push("--email");
        }
        if self.role.is_some() {
            given.push("--role");
        }
        if self.key_id.is_some() {
            given.push("--key-id");
        }
        if self.api_key.is_some() {
            given.push("--api-key");
        } else if self.env_api_key.is_some() {
            given.push(ENV_API_KEY);
        }
        if given.len() > 1 {
            let env = if given.contains(&ENV_API_KEY) {
                " (unset GATEHOUSE_API_KEY to use --email or --role)"
            } else {
                ""
            };
            return Err(Error::new(
                codes::ACTOR_FLAGS_CONFLICT,
                format!("more than one actor given: {}", given.join(", ")),
            )
            .hint(format!(
                "run as exactly one actor: --email, --role, --key-id or an API key{env}"
            ))
            .detail(serde_json::json!({"given": given})));
        }
        let key = self.api_key.as_ref().or(self.env_api_key.as_ref());
        Ok(if let Some(email) = &self.email {
            Some(ActorSource::Email(email))
        } else if let Some(roles) = &self.role {
            Some(ActorSource::Roles(roles))
        } else if let Some(id) = &self.key_id {
            Some(ActorSource::KeyId(id))
        } else {
            key.map(ActorSource::ApiKey)
        })
    }
}

/// A resolved actor. Each kind carries exactly what identifies it, so a user
/// always has an email and a key actor always has a key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The anonymous actor: role `public` only.
    Public,
    /// A user of the site, by email, with the user's roles. Restrictions
    /// only ever hold an OAuth token's scopes and grant (a grant approved
    /// `--as EMAIL`); a user has none of a key's.
    User {
        email: String,
        roles: Vec<Role>,
        restrictions: Restrictions,
    },
    /// Roles given on the command line (`--role`, scratch sites only).
    Synthetic { roles: Vec<Role> },
    /// An API key, by its public id, with the key's roles and the
    /// restrictions that narrow them.
    ApiKey {
        key_id: String,
        roles: Vec<Role>,
        restrictions: Restrictions,
    },
}

/// The kind of an [`Actor`], as `whoami --json` and the audit log name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    Public,
    User,
    Synthetic,
    ApiKey,
}

/// The flat JSON shape `gatehouse whoami --json` has always printed:
/// `{kind, email?, key_id?, roles}`.
#[derive(Serialize)]
struct ActorJson<'a> {
    kind: ActorKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<&'a str>,
    roles: &'a [Role],
    #[serde(skip_serializing_if = "Option::is_none")]
    restrictions: Option<&'a Restrictions>,
}

impl Serialize for Actor {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let (email, key_id) = match self {
            Actor::User { email, .. } => (Some(email.as_str()), None),
            Actor::ApiKey { key_id, .. } => (None, Some(key_id.as_str())),
            Actor::Public | Actor::Synthetic { .. } => (None, None),
        };
        ActorJson {
            kind: self.kind(),
            email,
            key_id,
            roles: self.roles(),
            restrictions: self.restrictions(),
        }
        .serialize(serializer)
    }
}

impl Actor {
    pub fn public() -> Actor {
        Actor::Public
    }

    pub fn kind(&self) -> ActorKind {
        match self {
            Actor::Public => ActorKind::Public,
            Actor::User { .. } => ActorKind::User,
            Actor::Synthetic { .. } => ActorKind::Synthetic,
            Actor::ApiKey { .. } => ActorKind::ApiKey,
        }
    }

    /// The roles the actor acts with (`[public]` for the anonymous actor).
    pub fn roles(&self) -> &[Role] {
        match self {
            Actor::Public => &[Role::Public],
            Actor::User { roles, .. }
            | Actor::Synthetic { roles }
            | Actor::ApiKey { roles, .. } => roles,
        }
    }

    /// Whether the actor authenticated (anything but anonymous `public`).
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Actor::Public)
    }

    /// How the actor appears in the audit log; never holds a secret.
    pub fn label(&self) -> String {
        self.audit_actor().to_string()
    }

    /// Who the audit log names for this actor.
    pub fn audit_actor(&self) -> AuditActor {
        match self {
            Actor::Public => AuditActor::Public,
            Actor::User { email, .. } => AuditActor::User(email.clone()),
            Actor::Synthetic { roles } => {
                AuditActor::Synthetic(crate::access::permissions::format_roles(roles))
            }
            Actor::ApiKey { key_id, .. } => AuditActor::Key(key_id.clone()),
        }
    }

    /// A key's restrictions (or a token's scopes), when it has any.
    pub fn restrictions(&self) -> Option<&Restrictions> {
        match self {
            Actor::ApiKey { restrictions, .. } | Actor::User { restrictions, .. }
                if !restrictions.is_empty() =>
            {
                Some(restrictions)
            }
            _ => None,
        }
    }

    /// The OAuth grant the actor acts through (a token's actor), if any.
    pub fn grant(&self) -> Option<&str> {
        self.restrictions().and_then(|r| r.grant.as_deref())
    }

    /// The content scope the actor is held to, if any.
    pub fn content_scope(&self) -> Option<&ContentScope> {
        self.restrictions().and_then(|r| r.content.as_ref())
    }

    /// Refuses when the actor has a content scope: for data that is not tied
    /// to entries (media), which a scope therefore cannot narrow.
    pub fn check_unscoped(&self, what: &str) -> Result<()> {
        match self.content_scope() {
            None => Ok(()),
            Some(scope) => Err(Error::new(
                crate::error::Code::KEY_SCOPE_CONTENT,
                format!("this key's content scope ({}) does not reach {what}", scope.describe()),
            )
            .hint(format!("{what} belong to no entry, so a key with a content scope cannot use them; use a key without one"))),
        }
    }

    /// The OAuth scopes the actor is narrowed to (a token's actor), if any.
    pub fn scopes(&self) -> Option<&crate::access::oauth::ScopeSet> {
        self.restrictions().and_then(|r| r.scopes.as_ref())
    }

    /// The roles allow `action` and, for a token, one of its scopes covers it.
    pub fn may(&self, action: Action) -> bool {
        crate::access::permissions::allowed(self.roles(), action)
            && self.scopes().is_none_or(|s| s.covers(action))
    }

    pub fn check(&self, action: Action) -> Result<()> {
        crate::access::permissions::check(self.roles(), action)?;
        match self.scopes() {
            Some(s) if !s.covers(action) => {
                Err(crate::access::oauth::insufficient_scope(s, action))
            }
            _ => Ok(()),
        }
    }
}

/// Resolves the actor from exactly one source, on a site whose store is
/// `store` (`--role` only on a `scratch` one).
pub async fn resolve(store: &Store, scratch: bool, flags: &ActorFlags) -> Result<Actor> {
    match flags.source()? {
        Some(ActorSource::Email(email)) => {
            let user = users::get(store, email)
                .await?
                .ok_or_else(|| unknown_email(email))?;
            if user.is_disabled() {
                return Err(users::disabled_error(&user.email));
            }
            Ok(Actor::User {
                email: user.email,
                roles: user.roles,
                restrictions: Restrictions::default(),
            })
        }
        Some(ActorSource::Roles(roles)) => {
            if !scratch {
                return Err(Error::new(codes::ACTOR_ROLE_NOT_SCRATCH, "--role is only allowed on a scratch site")
                    .hint("use --email for a real user or an API key; scratch sites are made with `gatehouse site init DIR --scratch`"));
            }
            Ok(Actor::Synthetic {
                roles: parse_roles(roles)?,
            })
        }
        Some(ActorSource::ApiKey(key)) => {
            let verified = keys::verify(store, key).await?;
            Ok(Actor::ApiKey {
                key_id: verified.id,
                roles: verified.roles,
                restrictions: verified.restrictions,
            })
        }
        // The same checks a key's every call gets (revoked, expired).
        Some(ActorSource::KeyId(id)) => {
            let key = keys::recheck(store, id).await?;
            Ok(Actor::ApiKey {
                key_id: key.id,
                roles: key.roles,
                restrictions: key.restrictions,
            })
        }
        None => Ok(Actor::public()),
    }
}

pub(crate) fn unknown_email(email: &str) -> Error {
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
pub async fn refresh(store: &Store, actor: &Actor) -> Result<Actor> {
    match actor {
        Actor::Public | Actor::Synthetic { .. } => Ok(actor.clone()),
        Actor::User {
            email,
            restrictions,
            ..
        } => {
            let user = users::get(store, email)
                .await?
                .ok_or_else(|| unknown_email(email))?;
            if user.is_disabled() {
                return Err(users::disabled_error(&user.email));
            }
            Ok(Actor::User {
                email: user.email,
                roles: user.roles,
                // A user has no restrictions of its own: only a token's.
                restrictions: Restrictions::default().keep_token(Some(restrictions)),
            })
        }
        Actor::ApiKey { key_id, .. } => {
            let key = keys::recheck(store, key_id).await?;
            Ok(Actor::ApiKey {
                key_id: key.id,
                roles: key.roles,
                restrictions: key.restrictions,
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
    /// Seeded with a generation read just now, for the request at hand: its
    /// first refresh need not read the generation again.
    fresh: std::sync::atomic::AtomicBool,
    /// An OAuth token's grant and when the token expires: a long stream
    /// (`subscriptions/listen`, a long call) ends with its grant or token.
    token: Option<(String, i64)>,
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
            fresh: false.into(),
            token: None,
        }
    }

    /// A refresher that already knows the actor as read at `generation` (an
    /// HTTP request whose key was just checked against a generation read for
    /// this very request): its first refresh reads nothing, later ones read
    /// the generation. A change committed after that read is seen by the
    /// next request, as one committed just after the request arrived would be.
    pub fn seeded(actor: Actor, generation: i64, expires_at: Option<i64>) -> Refresher {
        Refresher {
            identity: actor.clone(),
            cached: std::sync::Mutex::new(Some(Cached {
                generation,
                actor,
                expires_at,
            })),
            fresh: true.into(),
            token: None,
        }
    }

    /// [`Refresher::seeded`] for an OAuth access token of `grant_id`, valid
    /// until `token_expires_at`: every re-read also checks the grant stands.
    pub fn seeded_token(
        actor: Actor,
        generation: i64,
        key_expires_at: Option<i64>,
        grant_id: String,
        token_expires_at: i64,
    ) -> Refresher {
        let mut r = Refresher::seeded(actor, generation, key_expires_at);
        r.token = Some((grant_id, token_expires_at));
        r
    }

    /// Who the actor was at startup: whom to re-read, never what they may do.
    pub fn identity(&self) -> &Actor {
        &self.identity
    }

    /// The actor as the store has it now (see [`refresh`]).
    pub async fn refresh(&self, store: &Store) -> Result<Actor> {
        if matches!(self.identity, Actor::Public | Actor::Synthetic { .. }) {
            return Ok(self.identity.clone());
        }
        let now = crate::time::now_ms();
        if let Some((_, expires)) = &self.token
            && *expires <= now
        {
            *lock(&self.cached) = None;
            return Err(crate::access::oauth::flow::token_expired());
        }
        if self.fresh.swap(false, std::sync::atomic::Ordering::Relaxed)
            && let Some(c) = lock(&self.cached).as_ref()
            && c.expires_at.is_none_or(|e| e > now)
        {
            return Ok(c.actor.clone());
        }
        // Read before the full refresh: a change committed in between moves
        // the generation past this one, so the next call refreshes again.
        let generation = crate::store::access::generation(store).await?;
        if let Some(c) = lock(&self.cached).as_ref()
            && c.generation == generation
            && c.expires_at.is_none_or(|e| e > now)
        {
            return Ok(c.actor.clone());
        }
        if let Some((grant, _)) = &self.token {
            let live = crate::access::oauth::flow::check_grant(store, grant).await;
            live.inspect_err(|_| *lock(&self.cached) = None)?;
        }
        let (actor, expires_at) = match &self.identity {
            Actor::ApiKey { key_id, .. } => {
                let key = keys::recheck(store, key_id).await;
                let key = key.inspect_err(|_| *lock(&self.cached) = None)?;
                // A token's scopes and grant are not the key's: keep them
                // across re-reads.
                let restrictions = key.restrictions.keep_token(self.identity.restrictions());
                let actor = Actor::ApiKey {
                    key_id: key.id,
                    roles: key.roles,
                    restrictions,
                };
                (actor, key.expires_at)
            }
            _ => {
                let actor = refresh(store, &self.identity).await;
                let actor = actor.inspect_err(|_| *lock(&self.cached) = None)?;
                (actor, None)
            }
        };
        *lock(&self.cached) = Some(Cached {
            generation,
            actor: actor.clone(),
            expires_at,
        });
        Ok(actor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `gatehouse whoami --json` and the MCP server print this shape; scripts read it.
    #[test]
    fn serializes_in_the_flat_whoami_shape() {
        let cases = [
            (
                Actor::Public,
                serde_json::json!({"kind": "public", "roles": ["public"]}),
            ),
            (
                Actor::User {
                    email: "a@b.c".into(),
                    roles: vec![Role::Editor],
                    restrictions: Restrictions::default(),
                },
                serde_json::json!({"kind": "user", "email": "a@b.c", "roles": ["editor"]}),
            ),
            (
                Actor::Synthetic {
                    roles: vec![Role::Viewer],
                },
                serde_json::json!({"kind": "synthetic", "roles": ["viewer"]}),
            ),
            (
                Actor::ApiKey {
                    key_id: "abc".into(),
                    roles: vec![Role::Admin],
                    restrictions: Restrictions::default(),
                },
                serde_json::json!({"kind": "api_key", "key_id": "abc", "roles": ["admin"]}),
            ),
        ];
        for (actor, json) in cases {
            assert_eq!(serde_json::to_value(&actor).unwrap(), json);
        }
        assert_eq!(Actor::Public.label(), "public");
        assert!(!Actor::Public.is_authenticated());
    }

    #[test]
    fn one_actor_rule_names_every_source_given() {
        let key = RawKey::new("k");
        let flags = ActorFlags {
            email: Some("a@b.c".into()),
            env_api_key: Some(key.clone()),
            ..ActorFlags::default()
        };
        let err = flags.source().unwrap_err();
        assert_eq!(err.code, codes::ACTOR_FLAGS_CONFLICT);
        assert_eq!(
            err.detail.unwrap()["given"],
            serde_json::json!(["--email", "GATEHOUSE_API_KEY"])
        );
        assert!(err.hint.unwrap().contains("unset GATEHOUSE_API_KEY"));

        let only_key = ActorFlags {
            api_key: Some(key.clone()),
            env_api_key: Some(RawKey::new("env")),
            ..ActorFlags::default()
        };
        assert_eq!(only_key.source().unwrap(), Some(ActorSource::ApiKey(&key)));
        assert_eq!(ActorFlags::default().source().unwrap(), None);
    }
}
