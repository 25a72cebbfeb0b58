//! The MCP tool manifest, and the gate it is: which tools an actor is shown.
//!
//! Each tool names the permission-table action it needs ([`ToolSpec::action`]);
//! media, site-config and `http_fetch` tools are also for authenticated actors
//! only, so the anonymous `public` actor sees just the published-content reads.
//! A key's restrictions narrow the list further ([`super::reach`]): a key
//! sees only what it may call. Each tool has an explicit effect class
//! ([`Effect`]), which read-only keys and approval rules are decided on.
//! Listing is a courtesy, not the enforcement: every call is checked again by
//! the permission layer with roles re-read from the store.
//!
//! Names match `^[a-zA-Z0-9_-]{1,64}$`, which every major client accepts, and
//! the order is fixed so clients can cache the list.

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::access::actor::Actor;
use crate::access::permissions::Action;

/// One tool as Gatehouse defines it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The action the permission layer must allow.
    pub action: Action,
    /// Listed only for `--email`, `--role` or API-key actors.
    pub authenticated_only: bool,
    pub input_schema: Value,
    pub output_schema: Value,
    /// What calling it does to the site; the `readOnlyHint` follows from it.
    pub effect: Effect,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolSpec {
    /// Whether `actor` is shown this tool: its roles allow it and its key's
    /// restrictions (if any) do not take it away.
    pub fn visible_to(&self, actor: &Actor) -> bool {
        (actor.is_authenticated() || !self.authenticated_only)
            && actor.may(self.action)
            && super::reach::restrictions_allow(actor, self).is_ok()
    }

    /// Whether the tool only reads.
    pub fn read_only(&self) -> bool {
        self.effect == Effect::Read
    }

    /// The tool as MCP's `Tool` object.
    pub fn to_tool(&self) -> Tool {
        Tool::new(self.name, self.description, object(&self.input_schema))
            .with_title(self.title)
            .with_raw_output_schema(object(&self.output_schema))
            .with_annotations(
                ToolAnnotations::with_title(self.title)
                    .read_only(self.read_only())
                    .destructive(self.destructive)
                    .idempotent(self.idempotent)
                    .open_world(self.open_world),
            )
    }
}

/// What calling a tool does to the site.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Effect {
    /// Reads only (the site is unchanged; `http_fetch` reads the web).
    Read,
    /// Creates or changes drafts, revisions or media.
    Write,
    /// Makes content live.
    Publish,
    /// Removes something for good.
    Delete,
}

impl Effect {
    pub const ALL: [Effect; 4] = [Effect::Read, Effect::Write, Effect::Publish, Effect::Delete];
}

impl std::str::FromStr for Effect {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Effect> {
        Effect::ALL
            .into_iter()
            .find(|e| e.to_string() == s.trim())
            .ok_or_else(|| {
                crate::Error::invalid(
                    crate::error::Code::INPUT_INVALID,
                    format!("unknown effect class {s:?}"),
                    "effect classes are read, write, publish and delete",
                )
            })
    }
}

fn object(v: &Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().expect("schemas are objects"))
}

fn entry_schema(with_body: bool) -> Value {
    let mut props = json!({
        "slug": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "string", "enum": ["draft", "published"]},
        "author": {"type": "string", "description": "who wrote it; anonymous readers see a display name only"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
        "published_at": {"type": ["string", "null"], "format": "date-time"},
    });
    let mut required = vec![
        "slug",
        "title",
        "status",
        "author",
        "created_at",
        "updated_at",
        "published_at",
    ];
    if with_body {
        props["body"] = json!({"type": "string"});
        required.push("body");
        props["pending_revision"] = json!({
            "type": "object",
            "description": "An edit of the published entry waiting to be published (shown to viewers and above)",
            "properties": {
                "title": {"type": "string"},
                "body": {"type": "string"},
                "author": {"type": "string"},
                "updated_at": {"type": "integer", "description": "Unix milliseconds"},
            },
            "required": ["title", "body", "author", "updated_at"],
        });
    }
    json!({"type": "object", "properties": props, "required": required})
}

fn entries_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"entries": {"type": "array", "items": entry_schema(false)}},
        "required": ["entries"],
    })
}

fn media_info_schema(with_data: bool) -> Value {
    let mut props = json!({
        "filename": {"type": "string"},
        "mime_type": {"type": "string"},
        "size": {"type": "integer"},
        "sha256": {"type": "string"},
        "uploaded_by": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
    });
    let mut required = vec![
        "filename",
        "mime_type",
        "size",
        "sha256",
        "uploaded_by",
        "created_at",
    ];
    if with_data {
        props["data_base64"] = json!({"type": "string", "contentEncoding": "base64"});
        required.push("data_base64");
        props["content_disposition"] = json!({
            "type": "string",
            "description": "how to hand the bytes to a browser or a disk: raster images inline, everything else as an attachment (download)",
        });
        required.push("content_disposition");
    }
    json!({"type": "object", "properties": props, "required": required})
}

fn slug_input(description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"slug": {"type": "string", "minLength": 1, "maxLength": 100, "description": description}},
        "required": ["slug"],
        "additionalProperties": false,
    })
}

fn no_input() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

static SPECS: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
    let read = |name, title, description, action, authenticated_only, input, output| ToolSpec {
        name,
        title,
        description,
        action,
        authenticated_only,
        input_schema: input,
        output_schema: output,
        effect: Effect::Read,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    vec![
        read(
            "content_list",
            "List content",
            "List content entries, newest first. Anonymous readers see published entries only; viewers and above also see drafts.",
            Action::ContentReadPublished,
            false,
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                    "offset": {"type": "integer", "minimum": 0, "default": 0},
                },
                "additionalProperties": false,
            }),
            entries_schema(),
        ),
        read(
            "content_read",
            "Read an entry",
            "Read one content entry by slug (old slugs of renamed entries still work).",
            Action::ContentReadPublished,
            false,
            slug_input("the entry's slug"),
            entry_schema(true),
        ),
        read(
            "content_search",
            "Search content",
            "Full-text search over titles and bodies; every word must match. Best matches first.",
            Action::ContentReadPublished,
            false,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 500},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
            entries_schema(),
        ),
        ToolSpec {
            name: "content_write_draft",
            title: "Write a draft",
            description: "Create a draft entry, or replace the title and body of an entry you wrote (editors: any entry). A draft changes in place; an edit of a published entry is kept as its pending revision and the published text stays live until the entry is published again. Pass new_slug to rename (a published entry: editors only); the old slug keeps redirecting.",
            action: Action::ContentWriteDraft,
            authenticated_only: false,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "slug": {"type": "string", "minLength": 1, "maxLength": 100, "description": "lowercase letters, digits and dashes"},
                    "title": {"type": "string", "minLength": 1, "maxLength": 300},
                    "body": {"type": "string", "maxLength": 1_000_000},
                    "new_slug": {"type": "string", "minLength": 1, "maxLength": 100},
                },
                "required": ["slug", "title", "body"],
                "additionalProperties": false,
            }),
            output_schema: entry_schema(true),
            effect: Effect::Write,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        ToolSpec {
            name: "content_publish",
            title: "Publish an entry",
            description: "Publish an entry so anonymous readers can see it; a pending revision is applied first.",
            action: Action::ContentPublish,
            authenticated_only: false,
            input_schema: slug_input("the entry to publish"),
            output_schema: entry_schema(true),
            effect: Effect::Publish,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        ToolSpec {
            name: "content_delete",
            title: "Delete an entry",
            description: "Delete an entry and its redirects. This cannot be undone.",
            action: Action::ContentDelete,
            authenticated_only: false,
            input_schema: slug_input("the entry to delete"),
            output_schema: json!({
                "type": "object",
                "properties": {"deleted": {"type": "string"}},
                "required": ["deleted"],
            }),
            effect: Effect::Delete,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        read(
            "media_list",
            "List media",
            "List the site's media items (metadata only).",
            Action::MediaRead,
            true,
            no_input(),
            json!({
                "type": "object",
                "properties": {"media": {"type": "array", "items": media_info_schema(false)}},
                "required": ["media"],
            }),
        ),
        read(
            "media_read",
            "Read a media item",
            "Read a media item's metadata and its bytes as base64.",
            Action::MediaRead,
            true,
            json!({
                "type": "object",
                "properties": {"filename": {"type": "string", "minLength": 1, "maxLength": 200}},
                "required": ["filename"],
                "additionalProperties": false,
            }),
            media_info_schema(true),
        ),
        ToolSpec {
            name: "media_write",
            title: "Upload a media item",
            description: "Upload a new media item. The bytes travel as base64 (at most 2 MiB decoded) and must match the declared MIME type.",
            action: Action::MediaWrite,
            authenticated_only: true,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "filename": {"type": "string", "minLength": 1, "maxLength": 200},
                    "mime_type": {"type": "string", "enum": crate::site::media::MediaType::mimes()},
                    "data_base64": {"type": "string", "contentEncoding": "base64"},
                },
                "required": ["filename", "mime_type", "data_base64"],
                "additionalProperties": false,
            }),
            output_schema: media_info_schema(false),
            effect: Effect::Write,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        read(
            "site_config_read",
            "Read site config",
            "Read the site's configuration as key/value pairs. Values marked secret or shaped like one (credentials in URLs, private keys, tokens) are shown as <redacted>.",
            Action::SiteConfigRead,
            true,
            no_input(),
            json!({
                "type": "object",
                "properties": {"config": {"type": "object", "additionalProperties": {"type": "string"}}},
                "required": ["config"],
            }),
        ),
        ToolSpec {
            name: "http_fetch",
            title: "Fetch a URL",
            description: "GET a public http(s) URL and return its status, type and body (at most 1 MiB, 15 s). Internal and private addresses are refused.",
            action: Action::HttpFetch,
            authenticated_only: true,
            input_schema: json!({
                "type": "object",
                "properties": {"url": {"type": "string", "format": "uri", "maxLength": 4096}},
                "required": ["url"],
                "additionalProperties": false,
            }),
            output_schema: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "final_url": {"type": "string"},
                    "status": {"type": "integer"},
                    "content_type": {"type": "string"},
                    "body": {"type": "string"},
                    "body_base64": {"type": "string", "contentEncoding": "base64"},
                    "bytes": {"type": "integer"},
                    "truncated": {"type": "boolean"},
                    "redirects": {"type": "integer"},
                },
                "required": ["url", "final_url", "status", "bytes", "truncated", "redirects"],
            }),
            effect: Effect::Read,
            destructive: false,
            idempotent: true,
            open_world: true,
        },
    ]
});

/// Every tool, in manifest order.
pub fn all() -> &'static [ToolSpec] {
    &SPECS
}

/// A tool by name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    SPECS.iter().find(|t| t.name == name)
}

/// The tools `actor` is shown, in manifest order.
pub fn visible(actor: &Actor) -> Vec<&'static ToolSpec> {
    SPECS.iter().filter(|t| t.visible_to(actor)).collect()
}

/// The names `actor` is shown: what "the manifest changed" is decided on.
pub fn names(actor: &Actor) -> Vec<&'static str> {
    visible(actor).into_iter().map(|t| t.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::permissions::Role;

    fn synthetic(role: Role) -> Actor {
        Actor::Synthetic { roles: vec![role] }
    }

    #[test]
    fn names_are_portable_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for t in all() {
            assert!(
                !t.name.is_empty()
                    && t.name.len() <= 64
                    && t.name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{}",
                t.name
            );
            assert!(seen.insert(t.name));
            let tool = serde_json::to_value(t.to_tool()).unwrap();
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert_eq!(tool["outputSchema"]["type"], "object");
            assert_eq!(tool["annotations"]["readOnlyHint"], t.read_only());
        }
    }

    #[test]
    fn public_sees_only_published_reads() {
        assert_eq!(
            names(&Actor::public()),
            ["content_list", "content_read", "content_search"]
        );
    }

    #[test]
    fn each_role_sees_what_it_may_do() {
        let viewer = names(&synthetic(Role::Viewer));
        assert!(viewer.contains(&"media_read") && viewer.contains(&"http_fetch"));
        assert!(!viewer.contains(&"site_config_read"));
        assert!(!viewer.contains(&"content_write_draft"));
        let author = names(&synthetic(Role::Author));
        assert!(author.contains(&"content_write_draft") && author.contains(&"media_write"));
        assert!(!author.contains(&"content_publish"));
        let editor = names(&synthetic(Role::Editor));
        assert!(editor.contains(&"content_publish") && !editor.contains(&"content_delete"));
        assert_eq!(names(&synthetic(Role::Admin)).len(), all().len());
    }
}
