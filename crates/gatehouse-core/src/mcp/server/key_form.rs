//! The desktop app's key form: a key's restrictions edited as a whole (every
//! field shown at once), turned into a [`RestrictionChange`] so the checks,
//! the codes and the wording of refusals are the CLI's.
//!
//! Map: [`RestrictionForm`] is what the form holds ([`RestrictionForm::of`]
//! fills it from a key); [`tool_choices`] are the tools a set of roles
//! allows, for the allowlist picker; [`mint`] and [`restrict`] apply a form.
//! The approval list is not on this form: it is kept as it is.

use serde::{Deserialize, Serialize};

use super::manifest;
use super::reach::{self, RestrictionChange};
use crate::access::actor::Actor;
use crate::access::keys::{self, KeyInfo, Minted};
use crate::access::permissions::Role;
use crate::access::restrictions::{Restrictions, StatusScope};
use crate::error::{Code, Error, Result};
use crate::store::Store;

/// A key's restrictions as the form shows them: lists as comma-separated
/// text, empty for "not restricted".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RestrictionForm {
    /// `None`: every tool its roles allow; otherwise only these.
    pub tools: Option<Vec<String>>,
    pub read_only: bool,
    /// Slug patterns, comma-separated; empty for every slug.
    pub content: String,
    pub content_status: StatusScope,
    /// Calls per period (`60/min`); empty for no limit.
    pub rate: String,
    /// Client networks in CIDR form, comma-separated; empty for any.
    pub from: String,
}

impl RestrictionForm {
    /// The form filled from a key's restrictions.
    pub fn of(r: &Restrictions) -> RestrictionForm {
        let join = |items: Vec<String>| items.join(", ");
        RestrictionForm {
            tools: r.tools.clone(),
            read_only: r.read_only,
            content: r.content.as_ref().map_or_else(String::new, |c| {
                join(c.slugs.iter().map(|p| p.as_str().to_string()).collect())
            }),
            content_status: r.content.as_ref().map_or(StatusScope::Any, |c| c.status),
            rate: r.rate.map_or_else(String::new, |r| r.to_string()),
            from: r.from.as_ref().map_or_else(String::new, |nets| {
                join(nets.iter().map(ToString::to_string).collect())
            }),
        }
    }

    /// The change that makes a key's restrictions what the form shows
    /// (everything but the approval list is replaced).
    pub fn change(&self) -> Result<RestrictionChange> {
        let given = |text: &str| (!text.trim().is_empty()).then(|| text.to_string());
        let tools = match &self.tools {
            None => None,
            Some(list) if list.iter().all(|t| t.trim().is_empty()) => {
                return Err(Error::invalid(
                    Code::KEY_RESTRICTION_INVALID,
                    "no tool picked",
                    "pick at least one tool, or allow every tool the key's roles allow",
                ));
            }
            Some(list) => Some(list.join(",")),
        };
        Ok(RestrictionChange {
            tools,
            read_only: self.read_only,
            content: given(&self.content),
            content_status: Some(self.content_status.to_string()),
            rate: given(&self.rate),
            approve: None,
            from: given(&self.from),
            clear: ["tools", "read-only", "content", "rate", "from"]
                .map(String::from)
                .to_vec(),
        })
    }

    /// What the form's restrictions would be on a key that has none.
    pub fn restrictions(&self) -> Result<Restrictions> {
        self.change()?.apply(Restrictions::default())
    }
}

/// A tool the allowlist picker offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ToolChoice {
    pub name: String,
    pub title: String,
    /// `read`, `write`, `publish` or `delete`.
    pub effect: String,
}

/// The tools a key with `roles` (and no restriction) is shown, in manifest order.
pub fn tool_choices(roles: &[Role]) -> Vec<ToolChoice> {
    let actor = Actor::ApiKey {
        key_id: String::new(),
        roles: roles.to_vec(),
        restrictions: Restrictions::default(),
    };
    manifest::visible(&actor)
        .into_iter()
        .map(|t| ToolChoice {
            name: t.name.to_string(),
            title: t.title.to_string(),
            effect: t.effect.to_string(),
        })
        .collect()
}

/// Mints a key restricted as the form says.
pub async fn mint(
    store: &Store,
    actor: &str,
    label: &str,
    roles: &[Role],
    expires_at: Option<i64>,
    form: &RestrictionForm,
) -> Result<Minted> {
    let restrictions = form.restrictions()?;
    keys::mint_restricted(store, actor, label, roles, expires_at, &restrictions).await
}

/// Makes key `id`'s restrictions what the form says, in one transaction.
pub async fn restrict(
    store: &Store,
    actor: &str,
    id: &str,
    form: &RestrictionForm,
) -> Result<KeyInfo> {
    reach::restrict(store, actor, id, &form.change()?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> RestrictionForm {
        RestrictionForm {
            tools: Some(vec!["content_read".into(), "content_list".into()]),
            read_only: true,
            content: "blog-*, news-*".into(),
            content_status: StatusScope::Draft,
            rate: "60/min".into(),
            from: "10.0.0.0/8".into(),
        }
    }

    #[test]
    fn a_form_round_trips_through_restrictions() {
        let r = form().restrictions().unwrap();
        assert_eq!(
            r.tools.as_deref(),
            Some(&["content_list".to_string(), "content_read".to_string()][..]),
            "manifest order"
        );
        assert!(r.read_only);
        let again = RestrictionForm::of(&r);
        assert_eq!(again.content, "blog-*, news-*");
        assert_eq!(again.content_status, StatusScope::Draft);
        assert_eq!(again.rate, "60/min");
        assert_eq!(again.from, "10.0.0.0/8");
        assert_eq!(again.restrictions().unwrap(), r);
        assert_eq!(
            RestrictionForm::default().restrictions().unwrap(),
            Restrictions::default()
        );
        assert_eq!(
            RestrictionForm::of(&Restrictions::default()),
            RestrictionForm::default()
        );
    }

    #[test]
    fn the_form_replaces_all_but_the_approval_list() {
        let mut before = form().restrictions().unwrap();
        before.approve = Some(vec!["publish".into()]);
        let after = RestrictionForm {
            rate: "5/s".into(),
            ..RestrictionForm::default()
        }
        .change()
        .unwrap()
        .apply(before)
        .unwrap();
        assert_eq!(after.tools, None);
        assert!(!after.read_only);
        assert_eq!(after.content, None);
        assert_eq!(after.from, None);
        assert_eq!(after.rate.unwrap().to_string(), "5/s");
        assert_eq!(after.approve.as_deref(), Some(&["publish".to_string()][..]));
    }

    #[test]
    fn bad_fields_are_refused_with_the_restriction_code() {
        let bad = [
            RestrictionForm {
                tools: Some(vec![]),
                ..Default::default()
            },
            RestrictionForm {
                tools: Some(vec!["nope".into()]),
                ..Default::default()
            },
            RestrictionForm {
                content: "blog/*".into(),
                ..Default::default()
            },
            RestrictionForm {
                rate: "60/week".into(),
                ..Default::default()
            },
            RestrictionForm {
                from: "localhost".into(),
                ..Default::default()
            },
        ];
        for f in bad {
            let e = f.restrictions().unwrap_err();
            assert_eq!(e.code, Code::KEY_RESTRICTION_INVALID, "{f:?}");
            assert!(e.hint.is_some(), "{f:?}");
        }
    }

    #[test]
    fn a_status_alone_scopes_content() {
        let r = RestrictionForm {
            content_status: StatusScope::Published,
            ..Default::default()
        }
        .restrictions()
        .unwrap();
        let scope = r.content.unwrap();
        assert!(scope.slugs.is_empty());
        assert_eq!(scope.status, StatusScope::Published);
    }

    #[test]
    fn viewers_are_offered_read_tools_only() {
        let tools = tool_choices(&[Role::Viewer]);
        assert!(!tools.is_empty());
        assert!(tools.iter().all(|t| t.effect == "read"), "{tools:?}");
        assert!(tool_choices(&[Role::Editor]).len() > tools.len());
    }
}
