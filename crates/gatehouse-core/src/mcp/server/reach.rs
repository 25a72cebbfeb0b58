//! What an actor may reach: its roles' tools, narrowed by its key's
//! restrictions ([`crate::access::restrictions`]), applied in one place for
//! the manifest and for every call, whatever the transport.
//!
//! Map: [`restrictions_allow`] is the tool part (allowlist, read-only, media
//! withheld under a content scope; the content scope itself is applied by
//! `site::content`); [`count_call`] takes a call from the key's rate
//! (`tools::call` runs both on every call); [`RestrictionChange`] turns flags into restrictions,
//! checking tool names against the manifest; [`Reach`] says it all in words
//! for `whoami`, `keys list` and the Actor preview.

use serde::Serialize;

use super::manifest::{self, ToolSpec};
use crate::access::actor::Actor;
use crate::access::keys::{self, KeyInfo};
use crate::access::permissions::{Action, format_roles};
use crate::access::rate;
use crate::access::restrictions::{ContentScope, Restrictions, StatusScope, parse_patterns};
use crate::error::{Code, Error, Result};
use crate::store::Store;

/// Refuses a tool the actor's key restrictions take away (its roles are
/// checked separately, by the permission layer).
pub fn restrictions_allow(actor: &Actor, spec: &ToolSpec) -> Result<()> {
    let Some(r) = actor.restrictions() else {
        return Ok(());
    };
    if let Some(tools) = &r.tools
        && !tools.iter().any(|t| t == spec.name)
    {
        return Err(Error::new(
            Code::KEY_TOOL_NOT_ALLOWED,
            format!("{} is not among this key's tools", spec.name),
        )
        .hint(format!(
            "this key may call only {}; ask the site admin to change it with `gatehouse keys restrict`",
            tools.join(", ")
        ))
        .detail(serde_json::json!({"tool": spec.name, "tools": tools})));
    }
    if r.read_only && !spec.read_only() {
        return Err(Error::new(
            Code::KEY_READ_ONLY,
            format!("this key is read-only and {} {}s", spec.name, spec.effect),
        )
        .hint("use a key without --read-only for changes")
        .detail(serde_json::json!({"tool": spec.name, "effect": spec.effect})));
    }
    if matches!(spec.action, Action::MediaRead | Action::MediaWrite) {
        actor.check_unscoped("media")?;
    }
    Ok(())
}

/// Takes one call from a key's rate, if it has one. Every call counts,
/// refused or not, so a flood of refused calls is slowed too.
pub fn count_call(actor: &Actor) -> Result<()> {
    if let Actor::ApiKey { key_id, .. } = actor
        && let Some(rate) = actor.restrictions().and_then(|r| r.rate)
    {
        rate::take(key_id, rate)?;
    }
    Ok(())
}

/// A change to a key's restrictions, as flags give it. Each field given
/// replaces that restriction; `clear` lifts restrictions first.
#[derive(Debug, Clone, Default)]
pub struct RestrictionChange {
    /// Comma-separated tool names.
    pub tools: Option<String>,
    pub read_only: bool,
    /// Comma-separated slug patterns.
    pub content: Option<String>,
    /// `draft`, `published` or `any`.
    pub content_status: Option<String>,
    /// Calls per period, e.g. `60/min`.
    pub rate: Option<String>,
    /// Comma-separated tool names or effect classes whose calls wait for a yes.
    pub approve: Option<String>,
    /// Comma-separated client networks (`gatehouse serve` only).
    pub from: Option<String>,
    /// Restrictions to lift: `tools`, `read-only`, `content`, `rate`, `approve` or `all`.
    pub clear: Vec<String>,
}

impl RestrictionChange {
    /// `base` with this change applied, every part checked.
    pub fn apply(&self, mut r: Restrictions) -> Result<Restrictions> {
        for what in self.clear.iter().flat_map(|c| c.split(',')) {
            match what.trim() {
                "tools" => r.tools = None,
                "read-only" | "read_only" => r.read_only = false,
                "content" => r.content = None,
                "rate" => r.rate = None,
                "approve" => r.approve = None,
                "from" => r.from = None,
                "all" => r = Restrictions::default(),
                "" => {}
                other => {
                    return Err(Error::invalid(
                        Code::KEY_RESTRICTION_INVALID,
                        format!("cannot clear {other:?}"),
                        "clear one of tools, read-only, content, rate, approve, from or all",
                    ));
                }
            }
        }
        if let Some(list) = &self.tools {
            r.tools = Some(parse_tools(list)?);
        }
        if self.read_only {
            r.read_only = true;
        }
        if let Some(patterns) = &self.content {
            let status = r.content.as_ref().map_or(StatusScope::Any, |c| c.status);
            r.content = Some(ContentScope {
                slugs: parse_patterns(patterns)?,
                status,
            });
        }
        if let Some(status) = &self.content_status {
            let status: StatusScope = status.parse()?;
            let scope = r.content.get_or_insert_with(ContentScope::default);
            scope.status = status;
            if scope.slugs.is_empty() && status == StatusScope::Any {
                r.content = None;
            }
        }
        if let Some(rate) = &self.rate {
            r.rate = Some(rate.parse()?);
        }
        if let Some(list) = &self.approve {
            r.approve = Some(parse_approve(list)?);
        }
        if let Some(list) = &self.from {
            r.from = Some(crate::access::restrictions::parse_networks(list)?);
        }
        Ok(r)
    }
}

/// Tool names or effect classes, each checked against the manifest.
fn parse_approve(list: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if manifest::find(name).is_none() && name.parse::<manifest::Effect>().is_err() {
            return Err(Error::invalid(
                Code::KEY_RESTRICTION_INVALID,
                format!("{name:?} is neither a tool nor an effect class"),
                "name tools (e.g. content_publish, media_write) or effect classes (write, publish, delete)",
            ));
        }
        if !out.iter().any(|t| t == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() {
        return Err(Error::invalid(
            Code::KEY_RESTRICTION_INVALID,
            "no tool or effect class named",
            "e.g. --approve publish,media_write; to lift it use --clear approve",
        ));
    }
    Ok(out)
}

fn parse_tools(list: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if manifest::find(name).is_none() {
            let known = manifest::all()
                .iter()
                .map(|t| t.name)
                .collect::<Vec<_>>()
                .join(", ");
            return Err(Error::invalid(
                Code::KEY_RESTRICTION_INVALID,
                format!("there is no tool named {name:?}"),
                format!("the tools are {known}"),
            ));
        }
        if !out.iter().any(|t| t == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() {
        return Err(Error::invalid(
            Code::KEY_RESTRICTION_INVALID,
            "no tool named",
            "pass one or more tool names, comma-separated, e.g. --tools content_read,content_search; to lift the allowlist use --clear tools",
        ));
    }
    // Manifest order, so the stored list reads like the manifest.
    out.sort_by_key(|n| manifest::all().iter().position(|t| t.name == n));
    Ok(out)
}

/// Changes a key's restrictions, read and written in one transaction.
pub async fn restrict(
    store: &Store,
    actor_label: &str,
    id: &str,
    change: &RestrictionChange,
) -> Result<KeyInfo> {
    keys::restrict(store, actor_label, id, |current| change.apply(current)).await
}

/// An actor's effective reach: the tools it is shown and, in words, what
/// narrows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Reach {
    /// The tools it may call, in manifest order.
    pub tools: Vec<String>,
    /// Whether a key restriction narrows its roles.
    pub restricted: bool,
    /// One line per fact, for a person.
    pub words: Vec<String>,
}

/// The reach of `actor` as it stands.
pub fn describe(actor: &Actor) -> Reach {
    let tools: Vec<String> = manifest::visible(actor)
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let mut words = vec![format!(
        "roles {}: {} tool{}{}",
        format_roles(actor.roles()),
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        if tools.is_empty() {
            String::new()
        } else {
            format!(" ({})", tools.join(", "))
        }
    )];
    let Some(r) = actor.restrictions() else {
        if matches!(actor, Actor::ApiKey { .. }) {
            words.push("no restrictions beyond its roles".into());
        }
        return Reach {
            tools,
            restricted: false,
            words,
        };
    };
    if let Some(list) = &r.tools {
        words.push(format!("only the tools {}", list.join(", ")));
    }
    if r.read_only {
        words.push("read-only: only tools that read".into());
    }
    match &r.content {
        Some(scope) => {
            words.push(format!("content: only {}", scope.describe()));
            words.push(
                "media: none (media belong to no entry, so a content scope withholds them)".into(),
            );
        }
        None => words.push("content: every entry its roles may see".into()),
    }
    if let Some(list) = &r.approve {
        words.push(format!("waits for a person's yes: {}", list.join(", ")));
    }
    if let Some(nets) = &r.from {
        let nets: Vec<String> = nets.iter().map(ToString::to_string).collect();
        words.push(format!("over HTTP only from {}", nets.join(", ")));
    }
    if let Some(rate) = r.rate {
        words.push(format!("rate: at most {}", rate.describe()));
    }
    Reach {
        tools,
        restricted: true,
        words,
    }
}

/// The reach of a stored key (as listed), whatever its status.
pub fn describe_key(info: &KeyInfo) -> Reach {
    describe(&Actor::ApiKey {
        key_id: info.id.clone(),
        roles: info.roles.clone(),
        restrictions: info.restrictions.clone(),
    })
}

/// The tools and what narrows a key, as Markdown: the second half of
/// docs/permissions.md (`gatehouse permissions --markdown`).
pub fn markdown() -> String {
    let mut out = String::from(
        "\n## Tools\n\nEach MCP tool needs one action of the table above and has an effect class; a read-only key gets the `read` ones only.\n\n| tool | action | effect |\n|---|---|---|\n",
    );
    for t in manifest::all() {
        out.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            t.name,
            t.action.as_str(),
            t.effect
        ));
    }
    out.push_str(
        "\n## Key restrictions\n\nA key can be narrowed beyond its roles, at `gatehouse keys mint` or later with `gatehouse keys restrict ID` (`--clear tools|read-only|content|rate|approve|from|all` lifts one). A restriction never widens what the roles allow; the manifest a key sees lists only what it may call, and each refusal has its own code and audit entry.\n\n\
| restriction | flag | refusal |\n|---|---|---|\n\
| tool allowlist | `--tools content_read,content_search` | `KEY_TOOL_NOT_ALLOWED` |\n\
| read-only | `--read-only` | `KEY_READ_ONLY` |\n\
| content scope | `--content 'blog-*'` (slug patterns, `*` any run), `--content-status draft\\|published` | `KEY_SCOPE_CONTENT` |\n\
| rate | `--rate 60/min` (per second, minute, hour or day; a token bucket per key in the server) | `KEY_RATE_LIMITED`, with `retry_after_ms` |\n\
| approval | `--approve publish,media_write` (tools or effect classes; adds to the site's `[approvals]` policy) | held until a person says yes; `APPROVAL_DECLINED`, `APPROVAL_DENIED`, `APPROVAL_TIMEOUT`, `APPROVAL_STALE` |\n\
| client networks | `--from 10.0.0.0/8,192.168.1.0/24` (`gatehouse serve`; behind `--behind-proxy`, the forwarded address; stdio is local and unaffected) | `KEY_NETWORK_NOT_ALLOWED` (HTTP 403) |\n\n\
A content scope holds in every content tool: lists, searches and their limits and offsets count only entries in scope; a slug outside the patterns is refused by name; an entry reached through a redirect, or whose status is outside the scope, reads as absent; a published-only scope hides pending revisions and may not rename (a new slug may be a draft's: the refusal there would tell which drafts exist). A held call runs as its key is when the yes comes: a key revoked, narrowed or moved off the client's network meanwhile is refused then. Media belong to no entry, so a key with a content scope gets no media tools.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::permissions::Role;

    fn key(roles: &[Role], change: RestrictionChange) -> Actor {
        Actor::ApiKey {
            key_id: "k".into(),
            roles: roles.to_vec(),
            restrictions: change.apply(Restrictions::default()).unwrap(),
        }
    }

    #[test]
    fn a_restriction_only_narrows_the_roles_manifest() {
        let editor = key(
            &[Role::Editor],
            RestrictionChange {
                tools: Some("content_search,content_read,content_delete".into()),
                ..Default::default()
            },
        );
        // content_delete is allowed by the list but not by the editor role.
        assert_eq!(manifest::names(&editor), ["content_read", "content_search"]);
        let ro = key(
            &[Role::Admin],
            RestrictionChange {
                read_only: true,
                ..Default::default()
            },
        );
        let names = manifest::names(&ro);
        assert!(names.iter().all(|n| manifest::find(n).unwrap().read_only()));
        assert!(names.contains(&"http_fetch") && !names.contains(&"content_write_draft"));
        let scoped = key(
            &[Role::Author],
            RestrictionChange {
                content: Some("blog-*".into()),
                ..Default::default()
            },
        );
        let names = manifest::names(&scoped);
        assert!(!names.iter().any(|n| n.starts_with("media_")), "{names:?}");
        assert!(names.contains(&"content_write_draft"));
    }

    #[test]
    fn refusals_name_the_restriction() {
        let a = key(
            &[Role::Editor],
            RestrictionChange {
                tools: Some("content_read".into()),
                ..Default::default()
            },
        );
        let spec = manifest::find("content_list").unwrap();
        assert_eq!(
            restrictions_allow(&a, spec).unwrap_err().code,
            Code::KEY_TOOL_NOT_ALLOWED
        );
        let ro = key(
            &[Role::Editor],
            RestrictionChange {
                read_only: true,
                ..Default::default()
            },
        );
        let publish = manifest::find("content_publish").unwrap();
        assert_eq!(
            restrictions_allow(&ro, publish).unwrap_err().code,
            Code::KEY_READ_ONLY
        );
    }

    #[test]
    fn changes_apply_and_clear() {
        let r = RestrictionChange {
            tools: Some("content_search, content_read,content_read".into()),
            read_only: true,
            content: Some("blog-*".into()),
            content_status: Some("draft".into()),
            rate: Some("60/min".into()),
            approve: None,
            from: None,
            clear: vec![],
        }
        .apply(Restrictions::default())
        .unwrap();
        assert_eq!(
            r.tools.as_deref().unwrap(),
            ["content_read", "content_search"]
        );
        let cleared = RestrictionChange {
            clear: vec!["tools,rate".into(), "read-only".into()],
            ..Default::default()
        }
        .apply(r.clone())
        .unwrap();
        assert!(cleared.tools.is_none() && cleared.rate.is_none() && !cleared.read_only);
        assert_eq!(cleared.content, r.content);
        let all = RestrictionChange {
            clear: vec!["all".into()],
            ..Default::default()
        }
        .apply(r)
        .unwrap();
        assert!(all.is_empty());
        for bad in [
            RestrictionChange {
                tools: Some("content_reed".into()),
                ..Default::default()
            },
            RestrictionChange {
                tools: Some(" , ".into()),
                ..Default::default()
            },
            RestrictionChange {
                clear: vec!["everything".into()],
                ..Default::default()
            },
            RestrictionChange {
                content: Some("blog/*".into()),
                ..Default::default()
            },
        ] {
            assert_eq!(
                bad.apply(Restrictions::default()).unwrap_err().code,
                Code::KEY_RESTRICTION_INVALID
            );
        }
    }

    #[test]
    fn reach_in_words() {
        let a = key(
            &[Role::Author],
            RestrictionChange {
                content: Some("blog-*".into()),
                content_status: Some("draft".into()),
                rate: Some("60/min".into()),
                approve: None,
                from: None,
                ..Default::default()
            },
        );
        let reach = describe(&a);
        assert!(reach.restricted);
        assert!(
            reach
                .words
                .contains(&"content: only drafts with slugs matching blog-*".to_string())
        );
        assert!(
            reach
                .words
                .contains(&"rate: at most 60 calls a minute".to_string())
        );
        let plain = describe(&key(&[Role::Viewer], RestrictionChange::default()));
        assert!(!plain.restricted);
        assert_eq!(plain.words[1], "no restrictions beyond its roles");
    }
}
