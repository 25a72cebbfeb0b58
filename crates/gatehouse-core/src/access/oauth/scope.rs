//! OAuth scopes: what a client asks to do, in the permission table's terms.
//!
//! Each scope stands for a few actions of [`crate::access::permissions`];
//! a token may do an action only when one of its scopes covers it *and* its
//! actor's roles and restrictions allow it (the intersection, checked on
//! every call and in the manifest). Administration (keys, users, audit,
//! connections, config writes) has no scope: no token ever reaches it.

use std::fmt;
use std::str::FromStr;

use crate::access::permissions::Action;
use crate::error::{Code, Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    ContentRead,
    ContentWrite,
    ContentPublish,
    MediaRead,
    MediaWrite,
    SiteConfigRead,
    HttpFetch,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::ContentRead,
        Scope::ContentWrite,
        Scope::ContentPublish,
        Scope::MediaRead,
        Scope::MediaWrite,
        Scope::SiteConfigRead,
        Scope::HttpFetch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::ContentRead => "content:read",
            Scope::ContentWrite => "content:write",
            Scope::ContentPublish => "content:publish",
            Scope::MediaRead => "media:read",
            Scope::MediaWrite => "media:write",
            Scope::SiteConfigRead => "site_config:read",
            Scope::HttpFetch => "http_fetch",
        }
    }

    /// What the consent page says the client will be able to do.
    pub fn words(self) -> &'static str {
        match self {
            Scope::ContentRead => "read content, drafts included",
            Scope::ContentWrite => "write drafts, edit entries and delete them",
            Scope::ContentPublish => "publish content",
            Scope::MediaRead => "list and read media",
            Scope::MediaWrite => "upload and delete media",
            Scope::SiteConfigRead => "read the site config (secret values redacted)",
            Scope::HttpFetch => "fetch web pages through the site (SSRF-guarded)",
        }
    }

    /// The actions this scope covers.
    pub fn actions(self) -> &'static [Action] {
        match self {
            Scope::ContentRead => &[Action::ContentReadPublished, Action::ContentReadDraft],
            Scope::ContentWrite => &[
                Action::ContentWriteDraft,
                Action::ContentEditOthers,
                Action::ContentDelete,
            ],
            Scope::ContentPublish => &[Action::ContentPublish],
            Scope::MediaRead => &[Action::MediaRead],
            Scope::MediaWrite => &[Action::MediaWrite, Action::MediaDelete],
            Scope::SiteConfigRead => &[Action::SiteConfigRead],
            Scope::HttpFetch => &[Action::HttpFetch],
        }
    }

    /// The scope that covers `action`, if any does.
    pub fn covering(action: Action) -> Option<Scope> {
        Scope::ALL
            .into_iter()
            .find(|s| s.actions().contains(&action))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Scope> {
        Scope::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    Code::OAUTH_SCOPE_INVALID,
                    format!("unknown scope {s:?}"),
                    format!("scopes are {}", ScopeSet::all()),
                )
            })
    }
}

/// A set of scopes, sorted and without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ScopeSet(Vec<Scope>);

impl ScopeSet {
    pub fn all() -> ScopeSet {
        ScopeSet(Scope::ALL.to_vec())
    }

    pub fn new(mut scopes: Vec<Scope>) -> ScopeSet {
        scopes.sort();
        scopes.dedup();
        ScopeSet(scopes)
    }

    /// The space-separated form (RFC 6749 §3.3); an empty or absent
    /// `scope` asks for every scope (the consent page shows them).
    pub fn parse(text: &str) -> Result<ScopeSet> {
        let scopes = text
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(Scope::from_str)
            .collect::<Result<Vec<_>>>()?;
        Ok(if scopes.is_empty() {
            ScopeSet::all()
        } else {
            ScopeSet::new(scopes)
        })
    }

    pub fn scopes(&self) -> &[Scope] {
        &self.0
    }

    pub fn contains(&self, s: Scope) -> bool {
        self.0.contains(&s)
    }

    /// Whether some scope of the set covers `action`.
    pub fn covers(&self, action: Action) -> bool {
        self.0.iter().any(|s| s.actions().contains(&action))
    }

    pub fn is_subset(&self, other: &ScopeSet) -> bool {
        self.0.iter().all(|s| other.contains(*s))
    }

    /// This set with `s` added: what a client must ask for to do more.
    pub fn with(&self, s: Scope) -> ScopeSet {
        let mut v = self.0.clone();
        v.push(s);
        ScopeSet::new(v)
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        f.write_str(&names.join(" "))
    }
}

/// The scope table as Markdown, for docs/permissions.md.
pub fn markdown() -> String {
    let mut out = String::from(
        "\n## OAuth scopes\n\nA token from `gatehouse serve`'s OAuth flow may do an action only when one of its scopes covers it and its actor's roles (and key restrictions) allow it. Actions no scope covers are never reachable with a token.\n\n| scope | what | actions |\n|---|---|---|\n",
    );
    for s in Scope::ALL {
        let actions: Vec<String> = s
            .actions()
            .iter()
            .map(|a| format!("`{}`", a.as_str()))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            s.as_str(),
            s.words(),
            actions.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_sorted_and_empty_means_all() {
        let s = ScopeSet::parse("media:read content:read content:read").unwrap();
        assert_eq!(s.to_string(), "content:read media:read");
        assert_eq!(ScopeSet::parse("").unwrap(), ScopeSet::all());
        let e = ScopeSet::parse("content:read admin").unwrap_err();
        assert_eq!(e.code, Code::OAUTH_SCOPE_INVALID);
    }

    #[test]
    fn no_scope_reaches_administration() {
        for a in [
            Action::KeysManage,
            Action::UsersManage,
            Action::AuditRead,
            Action::ConnectionsManage,
            Action::SiteConfigWrite,
        ] {
            assert_eq!(Scope::covering(a), None, "{a:?}");
            assert!(!ScopeSet::all().covers(a));
        }
        assert_eq!(
            Scope::covering(Action::ContentPublish),
            Some(Scope::ContentPublish)
        );
    }
}
