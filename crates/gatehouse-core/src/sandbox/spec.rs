//! What a child runs and exactly which environment it gets: [`ChildSpec`],
//! [`EnvValue`] (plain, passed through from the host by name, or a
//! [`SecretValue`]), resolved at spawn time into [`ResolvedValue`]s.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, codes};

/// `PATH` inside the sandbox unless the connection lists its own.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A secret value: never printed, never in argv, only in the child's environment.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself; call only where it is handed to the child.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Where one variable of the child's environment comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EnvValue {
    /// A literal value, stored with the connection.
    Plain { value: String },
    /// The host's variable of that name, read at spawn time.
    FromHost { name: String },
    /// A secret; redacted everywhere but the child's environment.
    Secret { value: SecretValue },
    /// A secret read from the host's variable `name` at spawn time: what stored
    /// connection definitions use, so no secret value is ever written to the site.
    SecretFromHost { name: String },
}

/// What to run and exactly what environment it gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildSpec {
    pub program: String,
    pub args: Vec<String>,
    /// The only variables the child sees, besides `PATH` and `HOME` (which
    /// point into the sandbox unless listed here).
    pub env: BTreeMap<String, EnvValue>,
}

impl ChildSpec {
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, name: impl Into<String>, value: EnvValue) -> Self {
        self.env.insert(name.into(), value);
        self
    }

    /// The secret values the child will get (for redacting its output).
    pub fn secret_values(&self) -> Vec<String> {
        self.env
            .values()
            .filter_map(|v| match v {
                EnvValue::Secret { value } => Some(value.expose().to_string()),
                EnvValue::SecretFromHost { name } => crate::host_env::host_var(name),
                _ => None,
            })
            .collect()
    }

    /// The environment the child will get, resolved against the host now.
    /// Values are the child's; keep the result out of logs.
    pub fn resolve_env(&self, scratch: &Path) -> Result<BTreeMap<String, ResolvedValue>> {
        let mut out = BTreeMap::new();
        out.insert(
            "PATH".to_string(),
            ResolvedValue::Plain(DEFAULT_PATH.to_string()),
        );
        out.insert(
            "HOME".to_string(),
            ResolvedValue::Plain(scratch.to_string_lossy().into_owned()),
        );
        for (name, value) in &self.env {
            validate_env_name(name)?;
            let resolved = match value {
                EnvValue::Plain { value } => ResolvedValue::Plain(value.clone()),
                EnvValue::FromHost { name: host } => match crate::host_env::host_var(host) {
                    Some(v) => ResolvedValue::Plain(v),
                    None => {
                        return Err(Error::invalid(
                            codes::ENV_HOST_VAR_MISSING,
                            format!(
                                "the host has no variable {host} to pass to the child as {name}"
                            ),
                            format!(
                                "set {host} in the host environment, or list {name} with a plain value"
                            ),
                        ));
                    }
                },
                EnvValue::Secret { value } => ResolvedValue::Secret(value.clone()),
                EnvValue::SecretFromHost { name: host } => match crate::host_env::host_var(host) {
                    Some(v) => ResolvedValue::Secret(SecretValue::new(v)),
                    None => {
                        return Err(Error::invalid(
                            codes::ENV_HOST_VAR_MISSING,
                            format!("the host has no variable {host} holding the secret {name}"),
                            format!("set {host} in the environment of the process that connects"),
                        ));
                    }
                },
            };
            if resolved.expose().contains('\0') {
                return Err(Error::invalid(
                    codes::ENV_INVALID,
                    format!("the value of {name} contains a NUL byte"),
                    "environment values cannot contain NUL",
                ));
            }
            out.insert(name.clone(), resolved);
        }
        Ok(out)
    }
}

/// A resolved variable; `Debug` hides secrets.
#[derive(Clone, PartialEq, Eq)]
pub enum ResolvedValue {
    Plain(String),
    Secret(SecretValue),
}

impl ResolvedValue {
    pub(crate) fn expose(&self) -> &str {
        match self {
            ResolvedValue::Plain(v) => v,
            ResolvedValue::Secret(s) => s.expose(),
        }
    }
}

impl std::fmt::Debug for ResolvedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolvedValue::Plain(v) => write!(f, "{v:?}"),
            ResolvedValue::Secret(s) => write!(f, "{s:?}"),
        }
    }
}

fn validate_env_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(Error::invalid(
            codes::ENV_INVALID,
            format!("{name:?} is not a valid environment variable name"),
            "use a name without '=' or NUL, for example API_TOKEN",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_debug() {
        let spec = ChildSpec::new("x").env(
            "TOKEN",
            EnvValue::Secret {
                value: SecretValue::new("hunter2"),
            },
        );
        let dbg = format!("{spec:?}");
        assert!(!dbg.contains("hunter2"), "{dbg}");
        assert!(dbg.contains("SecretValue(<redacted>)"));
        let resolved = spec.resolve_env(Path::new("/s")).unwrap();
        assert!(!format!("{resolved:?}").contains("hunter2"));
        assert_eq!(resolved["TOKEN"].expose(), "hunter2");
    }

    #[test]
    fn path_and_home_point_into_the_sandbox_unless_listed() {
        let spec = ChildSpec::new("x");
        let env = spec.resolve_env(Path::new("/scratch/c-1")).unwrap();
        assert_eq!(env.len(), 2);
        assert_eq!(env["PATH"].expose(), DEFAULT_PATH);
        assert_eq!(env["HOME"].expose(), "/scratch/c-1");
        let spec = ChildSpec::new("x").env(
            "PATH",
            EnvValue::Plain {
                value: "/opt/bin".into(),
            },
        );
        assert_eq!(
            spec.resolve_env(Path::new("/s")).unwrap()["PATH"].expose(),
            "/opt/bin"
        );
    }

    #[test]
    fn missing_host_variable_is_an_error_not_an_empty_value() {
        let spec = ChildSpec::new("x").env(
            "A",
            EnvValue::FromHost {
                name: "GATEHOUSE_TEST_SURELY_UNSET_VAR".into(),
            },
        );
        let err = spec.resolve_env(Path::new("/s")).unwrap_err();
        assert_eq!(err.code, codes::ENV_HOST_VAR_MISSING);
    }

    #[test]
    fn bad_names_are_refused() {
        let spec = ChildSpec::new("x").env("A=B", EnvValue::Plain { value: "v".into() });
        assert_eq!(
            spec.resolve_env(Path::new("/s")).unwrap_err().code,
            codes::ENV_INVALID
        );
    }
}
