//! A connection definition as the desktop form edits it: limits as text
//! (`30s`, `512MiB`) and the environment as rows. [`DefinitionForm::into_saved`]
//! parses and validates it (every error names its field, see
//! [`saved::validate`]); [`DefinitionForm::of`] fills the form from a stored
//! definition. No secret value crosses in either direction: a secret row
//! holds the name of the host variable to read at connect time.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::saved::{self, SavedConnection, SavedLimits};
use crate::error::{Error, Result, codes};
use crate::sandbox::{ChildSpec, EnvValue, Profile};

/// Where an environment row's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum EnvKind {
    /// `value` is the literal value.
    Plain,
    /// `value` names the host variable whose value is passed through.
    Host,
    /// `value` names the host variable holding a secret, read at connect time
    /// and masked everywhere.
    Secret,
}

/// One environment row of the form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct EnvRow {
    pub name: String,
    pub kind: EnvKind,
    pub value: String,
}

/// The connection form. Empty limit fields take the client's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct DefinitionForm {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<EnvRow>,
    /// A duration such as `30s`; empty: 30 s.
    pub timeout: String,
    /// A size such as `512MiB`; empty: the site's default (`[limits]` in gatehouse.toml).
    pub max_rss: String,
    /// A duration of CPU time such as `60s`; empty: the site's default (`[limits]` in gatehouse.toml).
    pub max_cpu: String,
}

fn field(e: Error, name: &str) -> Error {
    e.detail(json!({ "field": name }))
}

fn millis(text: &str, name: &str) -> Result<Option<u64>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let d = crate::time::parse_duration(text).map_err(|e| field(e, name))?;
    Ok(Some(d.as_millis().min(u128::from(u64::MAX)) as u64))
}

fn format_ms(ms: Option<u64>) -> String {
    ms.map(|ms| humantime::format_duration(std::time::Duration::from_millis(ms)).to_string())
        .unwrap_or_default()
}

fn format_size(bytes: Option<u64>) -> String {
    match bytes {
        None => String::new(),
        Some(b) if b > 0 && b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        Some(b) if b > 0 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        Some(b) if b > 0 && b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        Some(b) => b.to_string(),
    }
}

impl DefinitionForm {
    /// The form filled from a stored definition.
    pub fn of(conn: &SavedConnection) -> Self {
        Self {
            name: conn.name.clone(),
            command: conn.spec.program.clone(),
            args: conn.spec.args.clone(),
            env: conn
                .spec
                .env
                .iter()
                .map(|(name, value)| {
                    let (kind, value) = match value {
                        EnvValue::Plain { value } => (EnvKind::Plain, value.clone()),
                        EnvValue::FromHost { name } => (EnvKind::Host, name.clone()),
                        EnvValue::SecretFromHost { name } => (EnvKind::Secret, name.clone()),
                        // Never stored (see `saved::validate`); never shown either.
                        EnvValue::Secret { .. } => (EnvKind::Secret, String::new()),
                    };
                    EnvRow {
                        name: name.clone(),
                        kind,
                        value,
                    }
                })
                .collect(),
            timeout: format_ms(conn.limits.timeout_ms),
            max_rss: format_size(conn.limits.max_rss_bytes),
            max_cpu: format_ms(conn.limits.max_cpu_ms),
        }
    }

    /// The definition this form describes, validated. `sandbox` and
    /// `inactivity_ms` are not on the form: the caller passes those of the
    /// definition being edited (defaults for a new one).
    pub fn into_saved(
        self,
        sandbox: Profile,
        inactivity_ms: Option<u64>,
        created_at: i64,
    ) -> Result<SavedConnection> {
        let mut env = std::collections::BTreeMap::new();
        for (i, row) in self.env.into_iter().enumerate() {
            let name = row.name.trim().to_string();
            let at = format!("env.{i}");
            if env.contains_key(&name) {
                return Err(field(
                    Error::invalid(
                        codes::ENV_INVALID,
                        format!("{name} is listed twice"),
                        "keep one row per variable",
                    ),
                    &at,
                ));
            }
            let value = match row.kind {
                EnvKind::Plain => EnvValue::Plain { value: row.value },
                EnvKind::Host => EnvValue::FromHost {
                    name: row.value.trim().to_string(),
                },
                EnvKind::Secret => EnvValue::SecretFromHost {
                    name: row.value.trim().to_string(),
                },
            };
            let probe = SavedConnection {
                name: "x".into(),
                spec: ChildSpec::new("x").env(name.clone(), value.clone()),
                limits: SavedLimits::default(),
                created_at: 0,
            };
            // Row errors name the row (`env.3`), which the form can point at.
            saved::validate(&probe).map_err(|e| field(e, &at))?;
            env.insert(name, value);
        }
        let max_rss_bytes = match self.max_rss.trim() {
            "" => None,
            text => Some(saved::parse_size(text).map_err(|e| field(e, "limits.max_rss_bytes"))?),
        };
        let conn = SavedConnection {
            name: self.name.trim().to_string(),
            spec: ChildSpec {
                program: self.command,
                args: self.args,
                env,
            },
            limits: SavedLimits {
                timeout_ms: millis(&self.timeout, "limits.timeout_ms")?,
                inactivity_ms,
                max_rss_bytes,
                max_cpu_ms: millis(&self.max_cpu, "limits.max_cpu_ms")?,
                sandbox,
            },
            created_at,
        };
        saved::validate(&conn)?;
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> DefinitionForm {
        DefinitionForm {
            name: "github".into(),
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
            env: vec![
                EnvRow {
                    name: "LOG".into(),
                    kind: EnvKind::Plain,
                    value: "debug".into(),
                },
                EnvRow {
                    name: "LANG".into(),
                    kind: EnvKind::Host,
                    value: "LANG".into(),
                },
                EnvRow {
                    name: "GITHUB_TOKEN".into(),
                    kind: EnvKind::Secret,
                    value: "GH_TOKEN".into(),
                },
            ],
            timeout: "45s".into(),
            max_rss: "512MiB".into(),
            max_cpu: "2m".into(),
        }
    }

    fn field_of(e: &Error) -> String {
        e.detail
            .as_ref()
            .and_then(|d| d["field"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_form_round_trips_through_a_definition() {
        let conn = form().into_saved(Profile::default(), None, 7).unwrap();
        assert_eq!(conn.limits.timeout_ms, Some(45_000));
        assert_eq!(conn.limits.max_rss_bytes, Some(512 << 20));
        assert_eq!(conn.limits.max_cpu_ms, Some(120_000));
        assert_eq!(
            conn.spec.env["GITHUB_TOKEN"],
            EnvValue::SecretFromHost {
                name: "GH_TOKEN".into()
            }
        );
        let back = DefinitionForm::of(&conn);
        assert_eq!(back.timeout, "45s");
        assert_eq!(back.max_cpu, "2m");
        assert_eq!(back.max_rss, "512MiB");
        // Rows come back sorted by name (the environment is a map).
        let mut want = form();
        want.env.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(back, want);
    }

    /// A change to a valid form, the field its error must name, and its code.
    type Case = (Box<dyn Fn(&mut DefinitionForm)>, &'static str, Code);

    #[test]
    fn every_error_names_its_field() {
        let cases: Vec<Case> = vec![
            (
                Box::new(|f| f.name = "Bad Name".into()),
                "name",
                codes::CONNECTION_NAME_INVALID,
            ),
            (
                Box::new(|f| f.command = "  ".into()),
                "command",
                codes::CALL_INVALID,
            ),
            (
                Box::new(|f| f.args.push("a\0b".into())),
                "args.2",
                codes::INPUT_INVALID,
            ),
            (
                Box::new(|f| f.env[0].name = "1BAD".into()),
                "env.0",
                codes::ENV_INVALID,
            ),
            (
                Box::new(|f| f.env[2].value = "not a var".into()),
                "env.2",
                codes::ENV_INVALID,
            ),
            (
                Box::new(|f| f.env[1].name = "LOG".into()),
                "env.1",
                codes::ENV_INVALID,
            ),
            (
                Box::new(|f| f.timeout = "soon".into()),
                "limits.timeout_ms",
                codes::DURATION_INVALID,
            ),
            (
                Box::new(|f| f.timeout = "3d".into()),
                "limits.timeout_ms",
                codes::DURATION_INVALID,
            ),
            (
                Box::new(|f| f.max_rss = "lots".into()),
                "limits.max_rss_bytes",
                codes::INPUT_INVALID,
            ),
            (
                Box::new(|f| f.max_rss = "1MiB".into()),
                "limits.max_rss_bytes",
                codes::INPUT_INVALID,
            ),
            (
                Box::new(|f| f.max_cpu = "0s".into()),
                "limits.max_cpu_ms",
                codes::DURATION_INVALID,
            ),
        ];
        for (edit, want_field, want_code) in cases {
            let mut f = form();
            edit(&mut f);
            let err = f
                .clone()
                .into_saved(Profile::default(), None, 0)
                .unwrap_err();
            assert_eq!(
                (field_of(&err).as_str(), err.code),
                (want_field, want_code),
                "{f:?}: {err}"
            );
        }
    }

    use crate::error::Code;
}
