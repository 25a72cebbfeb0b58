//! Consent to spawn a stored connection: what an admin is shown before the
//! first start of a new or changed definition ([`request`]), and the record
//! that they agreed ([`grant`]), kept per connection as the SHA-256 of the
//! exact definition ([`spec_and_limits_hash`]) bound to the machine that
//! agreed (its audit signing key). Editing the definition changes the hash, so
//! [`require`] refuses until the admin agrees again; so does a consent given
//! on another machine (a site on a shared PostgreSQL, a copied folder): the
//! row is in the site's database, which others write too.
//!
//! Values of environment variables never appear here: the request names each
//! variable, where its value comes from and, for a host variable, which one.

use serde::Serialize;
use serde_json::json;

use super::saved::{self, SavedConnection, spec_and_limits_hash};
use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::error::{Error, Result, codes};
use crate::mcp::client::options::ClientLimits;
use crate::sandbox::{EnvValue, runtime};
use crate::site::Site;
use crate::store::{self, Store};

/// Where one variable's value comes from; the value itself is never shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum EnvSource {
    /// A literal stored with the connection.
    Plain,
    /// Copied from the host's variable `host_variable` at connect time.
    Host,
    /// A secret read from the host's variable `host_variable` at connect time.
    Secret,
}

/// One variable of the child's environment, value masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ConsentEnv {
    pub name: String,
    pub source: EnvSource,
    pub host_variable: Option<String>,
}

/// The limits the child runs under, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ConsentLimits {
    pub call_timeout_ms: u64,
    pub inactivity_ms: Option<u64>,
    pub max_rss_bytes: Option<u64>,
    /// `max_rss_bytes` is the site's default (`[limits]` in
    /// `gatehouse.toml`), not the connection's own.
    pub max_rss_default: bool,
    pub max_cpu_ms: Option<u64>,
    /// Likewise for `max_cpu_ms`.
    pub max_cpu_default: bool,
    pub sandbox_backend: crate::sandbox::Backend,
    pub network: bool,
    pub read_only: Vec<String>,
    pub read_write: Vec<String>,
    pub scratch_quota_bytes: u64,
}

/// What the consent dialog shows: exactly what will be spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ConsentRequest {
    pub name: String,
    /// What [`grant`] must be given back, so a definition changed while the
    /// dialog was open is not consented by mistake.
    pub definition_sha256: String,
    /// The program and its arguments, exactly as passed to `exec`.
    pub argv: Vec<String>,
    /// Where `exec` finds the program with the child's `PATH`, if it does.
    pub program_path: Option<String>,
    pub env: Vec<ConsentEnv>,
    /// The child's working directory: a fresh directory under this root per run.
    pub working_directory: String,
    pub limits: ConsentLimits,
    /// A consent exists, but for an earlier version of this definition or
    /// given on another machine.
    pub changed_since_consent: bool,
}

/// This machine's audit signing key (hex; made now if it has none yet): the
/// consents it gives are bound to it, which every admin's machine has and no
/// database holds.
fn this_machine() -> Result<String> {
    let config = crate::host_env::config_dir()?;
    Ok(crate::site::checkpoint::signer::Signer::load_or_create(&config)?.public_hex())
}

/// What a consent given on `machine` (its key) holds for `definition_sha256`.
fn bind(machine: &str, definition_sha256: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(format!(
        "gatehouse-consent/1\n{machine}\n{definition_sha256}"
    )))
}

/// What an admin must agree to before `conn` is spawned.
pub async fn request(site: &Site, conn: &SavedConnection) -> Result<ConsentRequest> {
    request_on(site, conn, &this_machine()?).await
}

/// [`request`], as the machine with key `machine` sees it.
async fn request_on(site: &Site, conn: &SavedConnection, machine: &str) -> Result<ConsentRequest> {
    let stored = store::consents::get(&site.store, &conn.name).await?;
    let hash = spec_and_limits_hash(conn);
    let defaults = ClientLimits::default();
    let ceilings = saved::Ceilings::of(site, conn)?;
    let path = match conn.spec.env.get("PATH") {
        Some(EnvValue::Plain { value }) => value.clone(),
        _ => crate::sandbox::DEFAULT_PATH.to_string(),
    };
    let root = saved::scratch_root(site)?;
    let profile = &conn.limits.sandbox;
    let paths = |list: &[std::path::PathBuf]| {
        list.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    };
    Ok(ConsentRequest {
        name: conn.name.clone(),
        argv: std::iter::once(conn.spec.program.clone())
            .chain(conn.spec.args.iter().cloned())
            .collect(),
        program_path: runtime::resolve_program(&conn.spec.program, &path)
            .map(|p| p.display().to_string()),
        env: conn
            .spec
            .env
            .iter()
            .map(|(name, value)| {
                let (source, host_variable) = match value {
                    EnvValue::Plain { .. } => (EnvSource::Plain, None),
                    EnvValue::FromHost { name } => (EnvSource::Host, Some(name.clone())),
                    EnvValue::Secret { .. } => (EnvSource::Secret, None),
                    EnvValue::SecretFromHost { name } => (EnvSource::Secret, Some(name.clone())),
                };
                ConsentEnv {
                    name: name.clone(),
                    source,
                    host_variable,
                }
            })
            .collect(),
        working_directory: root.path().display().to_string(),
        limits: ConsentLimits {
            call_timeout_ms: conn
                .limits
                .timeout_ms
                .unwrap_or(defaults.call_timeout.as_millis() as u64),
            inactivity_ms: conn.limits.inactivity_ms,
            // The site's defaults where the connection sets none: the
            // dialog shows what the child will really run under.
            max_rss_bytes: Some(ceilings.max_rss_bytes),
            max_rss_default: ceilings.max_rss_default,
            max_cpu_ms: Some(ceilings.max_cpu_ms),
            max_cpu_default: ceilings.max_cpu_default,
            sandbox_backend: profile.backend,
            network: profile.network,
            read_only: paths(&profile.read_only),
            read_write: paths(&profile.read_write),
            scratch_quota_bytes: profile.scratch_quota(),
        },
        changed_since_consent: stored.is_some_and(|s| s.definition_sha256 != bind(machine, &hash)),
        definition_sha256: hash,
    })
}

/// Whether an admin on this machine agreed to spawn exactly this definition.
pub async fn is_granted(store: &Store, conn: &SavedConnection) -> Result<bool> {
    is_granted_on(store, conn, &this_machine()?).await
}

/// [`is_granted`] on the machine with key `machine`.
async fn is_granted_on(store: &Store, conn: &SavedConnection, machine: &str) -> Result<bool> {
    Ok(store::consents::get(store, &conn.name)
        .await?
        .is_some_and(|c| c.definition_sha256 == bind(machine, &spec_and_limits_hash(conn))))
}

/// Refuses with `CONSENT_REQUIRED` (the [`ConsentRequest`] in its detail)
/// unless an admin on this machine agreed to spawn exactly this definition.
pub async fn require(site: &Site, conn: &SavedConnection) -> Result<()> {
    let machine = this_machine()?;
    if is_granted_on(&site.store, conn, &machine).await? {
        return Ok(());
    }
    let req = request_on(site, conn, &machine).await?;
    let what = if req.changed_since_consent {
        "changed since you agreed to run it on this machine, or was agreed to on another"
    } else {
        "has not been started from here before"
    };
    Err(Error::invalid(
        codes::CONSENT_REQUIRED,
        format!("connection {} {what}", conn.name),
        "review the command, environment and limits, then agree to start it",
    )
    .detail(serde_json::to_value(&req).expect("request serialises")))
}

/// Records that `actor` agreed to spawn connection `name` as it is now,
/// audited as `connection.consent`. `definition_sha256` is the hash the admin
/// was shown: if the definition changed since, nothing is stored
/// (`CONSENT_STALE`).
pub async fn grant(store: &Store, actor: &str, name: &str, definition_sha256: &str) -> Result<()> {
    let conn = saved::get(store, name).await?;
    let hash = spec_and_limits_hash(&conn);
    if hash != definition_sha256 {
        return Err(Error::invalid(
            codes::CONSENT_STALE,
            format!("connection {name} changed after the consent dialog was shown"),
            "review the new definition and agree again",
        ));
    }
    // The key file is read before the write lock is taken.
    let bound = bind(&this_machine()?, &hash);
    let mut tx = store.begin_write().await?;
    store::consents::upsert_in(
        &mut tx,
        &store::consents::ConsentRow {
            name: name.to_string(),
            definition_sha256: bound,
            granted_by: actor.to_string(),
            granted_at: crate::time::now_ms(),
        },
    )
    .await?;
    audit::append(
        &mut tx,
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionConsent,
            subject: name,
            detail: json!({
                "definition_sha256": hash,
                "program": conn.spec.program,
                "env": conn.spec.env.keys().collect::<Vec<_>>(),
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording a consent", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::ChildSpec;

    fn conn(spec: ChildSpec) -> SavedConnection {
        SavedConnection {
            name: "echo".into(),
            spec,
            limits: saved::SavedLimits::default(),
            created_at: 0,
        }
    }

    #[test]
    fn the_hash_changes_with_anything_that_runs_and_not_with_the_name() {
        let base = conn(ChildSpec::new("python3").arg("server.py"));
        let h = spec_and_limits_hash(&base);
        assert_eq!(h.len(), 64);
        assert_eq!(h, spec_and_limits_hash(&base.clone()), "stable");
        let mut renamed = base.clone();
        renamed.name = "other".into();
        assert_eq!(h, spec_and_limits_hash(&renamed));
        let changed = [
            conn(ChildSpec::new("python3").arg("evil.py")),
            conn(ChildSpec::new("python").arg("server.py")),
            conn(ChildSpec::new("python3").arg("server.py").env(
                "TOKEN",
                EnvValue::SecretFromHost {
                    name: "GH_TOKEN".into(),
                },
            )),
            {
                let mut c = base.clone();
                c.limits.max_rss_bytes = Some(1 << 30);
                c
            },
            {
                let mut c = base.clone();
                c.limits.sandbox.network = true;
                c
            },
        ];
        for c in changed {
            assert_ne!(h, spec_and_limits_hash(&c), "{c:?}");
        }
    }
}
