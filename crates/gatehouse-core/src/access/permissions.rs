//! The one permission layer: every action of every caller (CLI, MCP server, UI)
//! is decided by [`allowed`], from the single table [`Action::min_role`].
//!
//! Roles are ordered: each role can do everything the role below it can, so the
//! table names the lowest role that may do an action. `gatehouse permissions
//! --markdown` renders the table for the docs (docs/permissions.md is generated
//! from it and a test keeps the two in step).
//!
//! Content follows an author edit model: an author creates drafts and edits
//! the entries they wrote (`content_write_draft`); entries by someone else
//! need `content_edit_others` (editors and admins). An edit of a published
//! entry never unpublishes it: it becomes the entry's pending revision and
//! the published text stays live until someone with `content_publish`
//! publishes it. Renaming a published entry changes a live address, so it
//! also needs `content_publish`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result, codes};

/// A role. `Public` is the anonymous actor's role and cannot be granted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Public,
    Viewer,
    Author,
    Editor,
    Admin,
}

impl Role {
    /// Roles that can be given to a user, a key or a synthetic actor.
    pub const GRANTABLE: [Role; 4] = [Role::Viewer, Role::Author, Role::Editor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Public => "public",
            Role::Viewer => "viewer",
            Role::Author => "author",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "viewer" => Ok(Role::Viewer),
            "author" => Ok(Role::Author),
            "editor" => Ok(Role::Editor),
            "admin" => Ok(Role::Admin),
            other => Err(Error::invalid(
                codes::ROLE_UNKNOWN,
                format!("unknown role {other:?}"),
                "roles are viewer, author, editor and admin (public is the anonymous actor and cannot be granted)",
            )),
        }
    }
}

/// Parses a comma-separated role list (`"viewer,editor"`), sorted and deduplicated.
pub fn parse_roles(list: &str) -> Result<Vec<Role>> {
    let mut roles = list
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(Role::from_str)
        .collect::<Result<Vec<_>>>()?;
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        return Err(Error::invalid(
            codes::ROLES_EMPTY,
            "no roles given",
            "pass at least one of viewer, author, editor, admin (comma-separated)",
        ));
    }
    Ok(roles)
}

/// The stored form of a role list.
pub fn format_roles(roles: &[Role]) -> String {
    roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Everything an actor can ask to do, in the order the docs table lists them.
/// [`Action::min_role`] and [`Action::what`] are exhaustive `match`es, so a new
/// action does not compile until it has a role and a description.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Action {
    ContentReadPublished,
    ContentReadDraft,
    MediaRead,
    SiteConfigRead,
    HttpFetch,
    ContentWriteDraft,
    MediaWrite,
    ContentEditOthers,
    ContentPublish,
    ContentDelete,
    MediaDelete,
    SiteConfigWrite,
    KeysManage,
    UsersManage,
    AuditRead,
    ConnectionsManage,
}

impl Action {
    /// Every action, in declaration order (the docs table's order).
    pub fn all() -> impl Iterator<Item = Action> {
        <Action as strum::IntoEnumIterator>::iter()
    }

    /// The lowest role allowed to do this action: the permission table.
    pub fn min_role(self) -> Role {
        use Action::*;
        match self {
            ContentReadPublished => Role::Public,
            ContentReadDraft | MediaRead | HttpFetch => Role::Viewer,
            ContentWriteDraft | MediaWrite => Role::Author,
            SiteConfigRead | ContentEditOthers | ContentPublish => Role::Editor,
            ContentDelete | MediaDelete | SiteConfigWrite | KeysManage | UsersManage
            | AuditRead | ConnectionsManage => Role::Admin,
        }
    }

    /// What the action allows, for the docs table.
    pub fn what(self) -> &'static str {
        use Action::*;
        match self {
            ContentReadPublished => "read published content",
            ContentReadDraft => "read draft content",
            MediaRead => "list and read media",
            SiteConfigRead => "read site config (secret values redacted)",
            HttpFetch => "fetch a URL over http(s) (SSRF-guarded)",
            ContentWriteDraft => {
                "create drafts and edit your own entries (an edit of a published entry waits as a pending revision)"
            }
            MediaWrite => "upload media",
            ContentEditOthers => "edit entries written by someone else",
            ContentPublish => {
                "publish content (applying its pending revision) and rename published entries"
            }
            ContentDelete => "delete content",
            MediaDelete => "delete media",
            SiteConfigWrite => "change site config",
            KeysManage => "mint, list, roll and revoke API keys",
            UsersManage => "create, change and remove users",
            AuditRead => "read the audit log",
            ConnectionsManage => "manage MCP client connections",
        }
    }

    /// The stable name, e.g. `"content_publish"` (as serde writes it).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether an actor holding `roles` may do `action`. An empty list is `public`.
pub fn allowed(roles: &[Role], action: Action) -> bool {
    let highest = roles.iter().copied().max().unwrap_or(Role::Public);
    highest >= action.min_role()
}

/// [`allowed`], as an error naming what was refused and what would allow it.
pub fn check(roles: &[Role], action: Action) -> Result<()> {
    if allowed(roles, action) {
        return Ok(());
    }
    let min = action.min_role();
    let held = if roles.is_empty() {
        "public".to_string()
    } else {
        format_roles(roles)
    };
    Err(Error::new(
        codes::PERMISSION_DENIED,
        format!("{} is not allowed for roles [{held}]", action.as_str()),
    )
    .hint(format!("this needs the {min} role or higher"))
    .detail(serde_json::json!({"action": action.as_str(), "required_role": min.as_str()})))
}

/// The table as Markdown, for docs/permissions.md.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Permissions\n\nGenerated by `gatehouse permissions --markdown` from `permissions::Action`; do not edit by hand.\n\n| action | what | public | viewer | author | editor | admin |\n|---|---|---|---|---|---|---|\n",
    );
    for action in Action::all() {
        out.push_str(&format!("| `{}` | {} |", action.as_str(), action.what()));
        for role in [
            Role::Public,
            Role::Viewer,
            Role::Author,
            Role::Editor,
            Role::Admin,
        ] {
            out.push_str(if allowed(&[role], action) {
                " yes |"
            } else {
                " – |"
            });
        }
        out.push('\n');
    }
    out.push_str(&crate::access::oauth::scope::markdown());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Driven by the enum itself: an action added later is checked here without
    /// editing the test (and cannot compile without a role and a description).
    #[test]
    fn every_action_has_one_name_and_is_allowed_exactly_from_its_role_up() {
        let mut names = std::collections::HashSet::new();
        let mut rows = 0;
        for action in Action::all() {
            let name = action.as_str();
            assert_eq!(serde_json::to_value(action).unwrap(), name);
            assert_eq!(
                serde_json::from_value::<Action>(name.into()).unwrap(),
                action
            );
            assert!(names.insert(name), "duplicate {name}");
            assert!(!action.what().is_empty(), "{name}");
            for role in [
                Role::Public,
                Role::Viewer,
                Role::Author,
                Role::Editor,
                Role::Admin,
            ] {
                assert_eq!(
                    allowed(&[role], action),
                    role >= action.min_role(),
                    "{name} {role}"
                );
            }
            assert!(markdown().contains(&format!("| `{name}` | {} |", action.what())));
            rows += 1;
        }
        // The role table (what follows the first blank line after it is
        // another section) has one row per action.
        let doc = markdown();
        let (_, table) = doc
            .split_once("|---|---|---|---|---|---|---|\n")
            .expect("the role table");
        let table = table.split("\n\n").next().expect("its rows");
        assert_eq!(table.lines().filter(|l| l.starts_with("| `")).count(), rows);
    }

    #[test]
    fn the_documented_role_table_holds() {
        use Action::*;
        let p: &[Role] = &[];
        assert!(allowed(p, ContentReadPublished));
        assert!(!allowed(p, ContentReadDraft));
        assert!(!allowed(p, MediaRead));
        assert!(!allowed(p, SiteConfigRead));
        assert!(!allowed(p, HttpFetch));
        let v = &[Role::Viewer];
        assert!(allowed(v, ContentReadDraft) && allowed(v, MediaRead));
        assert!(!allowed(v, SiteConfigRead) && !allowed(&[Role::Author], SiteConfigRead));
        assert!(!allowed(v, ContentWriteDraft) && !allowed(v, MediaWrite));
        let a = &[Role::Author];
        assert!(allowed(a, ContentWriteDraft) && allowed(a, MediaWrite));
        assert!(!allowed(a, ContentPublish) && !allowed(a, ContentEditOthers));
        let e = &[Role::Editor];
        assert!(allowed(e, ContentPublish) && allowed(e, ContentEditOthers));
        assert!(allowed(e, SiteConfigRead));
        assert!(!allowed(e, ContentDelete) && !allowed(e, KeysManage) && !allowed(e, UsersManage));
        let ad = &[Role::Admin];
        for action in Action::all() {
            assert!(allowed(ad, action));
        }
    }

    #[test]
    fn several_roles_count_as_the_highest() {
        assert!(allowed(
            &[Role::Viewer, Role::Editor],
            Action::ContentPublish
        ));
    }

    #[test]
    fn denial_names_the_action_and_role() {
        let err = check(&[Role::Viewer], Action::ContentPublish).unwrap_err();
        assert_eq!(err.code, codes::PERMISSION_DENIED);
        assert!(err.message.contains("content_publish"));
        assert!(err.hint.unwrap().contains("editor"));
    }

    #[test]
    fn role_lists_parse_and_refuse() {
        assert_eq!(
            parse_roles("editor, viewer,editor").unwrap(),
            vec![Role::Viewer, Role::Editor]
        );
        assert_eq!(parse_roles("public").unwrap_err().code, codes::ROLE_UNKNOWN);
        assert_eq!(parse_roles(" , ").unwrap_err().code, codes::ROLES_EMPTY);
    }
}
