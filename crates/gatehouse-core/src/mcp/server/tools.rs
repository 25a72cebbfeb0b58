//! The tools: arguments in, one core call, a `CallToolResult` out, one audit entry.
//!
//! Refusals (permission, revoked key) and bad arguments are tool results with
//! `isError: true` whose text is `{"error": {code, message, hint}}`, so a model
//! can read why and the stable code survives every client. Successful results
//! carry `structuredContent` (matching the tool's `outputSchema`) and the same
//! JSON as a text block for clients that predate structured output.
//!
//! The audit entry holds the actor, the tool, the SHA-256 of the canonical
//! arguments and the outcome, never the arguments themselves: a URL or a
//! media upload may carry something the caller would not want in a log.

use rmcp::model::{CallToolResult, ContentBlock, TextContent};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::http_fetch;
use crate::access::actor::Actor;
use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::access::users;
use crate::error::{Code, Error, Result, codes};
use crate::mcp::server::manifest::ToolSpec;
use crate::site::Site;
use crate::site::config as site_config;
use crate::site::content::{self, ContentEntry, DraftWrite};
use crate::site::media::{self, MediaInfo, Upload};
use crate::time::rfc3339;

/// A finished call: the result to send and the code for the audit log.
pub struct Outcome {
    pub result: CallToolResult,
    pub code: Option<Code>,
}

impl Outcome {
    /// `CallToolResult::structured`, but with its text block written
    /// straight into a buffer: `Value::to_string` goes through `fmt` for
    /// every piece it writes, and an entry's body is most of a call's text.
    fn ok(value: Value) -> Outcome {
        let text = serde_json::to_string(&value).expect("a JSON value serialises");
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        Outcome { result, code: None }
    }

    pub fn err(e: &Error) -> Outcome {
        Outcome {
            result: CallToolResult::error(vec![ContentBlock::text(
                json!({"error": e.for_client().body()}).to_string(),
            )]),
            code: Some(e.code),
        }
    }
}

/// A tool's result as its response carries it, built by moving its parts in.
/// Equal to `serde_json::to_value(&result)`, which would copy every string in
/// it (an entry's body twice: as structured content and as its text block).
pub fn result_value(result: CallToolResult) -> Value {
    let CallToolResult {
        result_type,
        content,
        structured_content,
        is_error,
        meta,
        ..
    } = result;
    let mut out = Map::new();
    if let Some(t) = result_type {
        out.insert("resultType".into(), json!(t));
    }
    let blocks = content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(TextContent {
                text,
                meta: None,
                annotations: None,
                ..
            }) => {
                let mut b = Map::new();
                b.insert("type".into(), Value::from("text"));
                b.insert("text".into(), Value::String(text));
                Value::Object(b)
            }
            other => json!(other),
        })
        .collect();
    out.insert("content".into(), Value::Array(blocks));
    if let Some(v) = structured_content {
        out.insert("structuredContent".into(), v);
    }
    if let Some(e) = is_error {
        out.insert("isError".into(), Value::Bool(e));
    }
    if let Some(m) = meta {
        out.insert("_meta".into(), json!(m));
    }
    Value::Object(out)
}

/// Whether a call still takes its call from the key's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    Take,
    /// Taken already, when the approval step held it.
    Taken,
}

/// Runs `spec` for `actor` (already refreshed from the store).
pub async fn call(
    site: &Site,
    actor: &Actor,
    spec: &ToolSpec,
    args: &Value,
    rate: Rate,
) -> Outcome {
    if let Err(e) = gate(actor, spec, rate).and_then(|()| super::arguments::check(spec, args)) {
        return Outcome::err(&e);
    }
    match run(site, actor, spec.name, args).await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::err(&e),
    }
}

/// The call-time gate, the same rule as the manifest's: a key's rate, its
/// roles, then its restrictions.
fn gate(actor: &Actor, spec: &ToolSpec, rate: Rate) -> Result<()> {
    if rate == Rate::Take {
        super::reach::count_call(actor)?;
    }
    actor.check(spec.action)?;
    super::reach::restrictions_allow(actor, spec)?;
    if spec.authenticated_only && !actor.is_authenticated() {
        return Err(Error::new(
            codes::PERMISSION_DENIED,
            format!("{} needs an authenticated actor", spec.name),
        )
        .hint("run gatehouse mcp with --email, --role or an API key"));
    }
    Ok(())
}

/// Whether a call would pass its checks (roles, restrictions, arguments),
/// without counting it against the key's rate: the approval step holds only
/// calls that would run.
pub fn admissible(actor: &Actor, spec: &ToolSpec, args: &Value) -> Result<()> {
    actor.check(spec.action)?;
    super::reach::restrictions_allow(actor, spec)?;
    super::arguments::check(spec, args)
}

fn args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T> {
    T::deserialize(args).map_err(|e| {
        Error::invalid(
            codes::TOOL_ARGUMENTS_INVALID,
            format!("invalid arguments for {tool}: {e}"),
            "check the arguments against the tool's inputSchema",
        )
    })
}

fn in_range(tool: &str, name: &str, v: i64, min: i64, max: i64) -> Result<i64> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(Error::invalid(
            codes::TOOL_ARGUMENTS_INVALID,
            format!("invalid arguments for {tool}: {name} must be between {min} and {max}"),
            "check the arguments against the tool's inputSchema",
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default = "default_list_limit")]
    limit: i64,
    #[serde(default)]
    offset: i64,
}

fn default_list_limit() -> i64 {
    50
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlugArgs {
    slug: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default = "default_search_limit")]
    limit: i64,
}

fn default_search_limit() -> i64 {
    20
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    slug: String,
    title: String,
    body: String,
    new_slug: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilenameArgs {
    filename: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MediaWriteArgs {
    filename: String,
    mime_type: String,
    data_base64: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
}

/// Author labels as this actor may see them: as stored (`user:<email>`,
/// `key:<id>`) for those who may read drafts, a display name for anonymous
/// readers. Looked up once per label per call.
struct Authors<'a> {
    site: &'a Site,
    public: bool,
    seen: std::collections::HashMap<String, String>,
}

impl<'a> Authors<'a> {
    fn new(site: &'a Site, actor: &Actor) -> Self {
        Authors {
            site,
            public: !actor.may(crate::access::permissions::Action::ContentReadDraft),
            seen: Default::default(),
        }
    }

    async fn shown(&mut self, label: &str) -> Result<String> {
        if !self.public {
            return Ok(label.to_string());
        }
        if let Some(name) = self.seen.get(label) {
            return Ok(name.clone());
        }
        let name = users::public_name(&self.site.store, label).await?;
        self.seen.insert(label.to_string(), name.clone());
        Ok(name)
    }

    async fn entries(&mut self, list: Vec<ContentEntry>) -> Result<Value> {
        let mut out = Vec::with_capacity(list.len());
        for e in list {
            let author = self.shown(&e.author).await?;
            out.push(entry_json(e, false, author, None));
        }
        Ok(json!({"entries": out}))
    }

    /// One entry with its body and, for those who may read drafts, its
    /// pending revision as it is now (after a write).
    async fn entry(&mut self, actor: &Actor, e: ContentEntry) -> Result<Value> {
        let pending = content::pending(&self.site.store, actor, &e).await?;
        self.entry_with(e, pending).await
    }

    /// One entry with its body and the pending revision read with it.
    async fn entry_with(
        &mut self,
        e: ContentEntry,
        pending: Option<content::PendingRevision>,
    ) -> Result<Value> {
        let author = self.shown(&e.author).await?;
        Ok(entry_json(e, true, author, pending))
    }
}

/// An entry as the content tools show it, built by moving its strings in
/// (`json!` copies each, an entry's body included).
fn entry_json(
    e: ContentEntry,
    with_body: bool,
    author: String,
    pending: Option<content::PendingRevision>,
) -> Value {
    let mut v = Map::new();
    v.insert("slug".into(), e.slug.into());
    v.insert("title".into(), e.title.into());
    v.insert("status".into(), e.status.into());
    v.insert("author".into(), author.into());
    v.insert("created_at".into(), rfc3339(e.created_at).into());
    v.insert("updated_at".into(), rfc3339(e.updated_at).into());
    v.insert("published_at".into(), e.published_at.map(rfc3339).into());
    if with_body {
        v.insert("body".into(), e.body.into());
    }
    if let Some(p) = pending {
        let mut r = Map::new();
        r.insert("title".into(), p.title.into());
        r.insert("body".into(), p.body.into());
        r.insert("author".into(), p.author.into());
        r.insert("updated_at".into(), p.updated_at.into());
        v.insert("pending_revision".into(), r.into());
    }
    v.into()
}

fn media_json(m: &MediaInfo) -> Value {
    json!({
        "filename": m.filename,
        "mime_type": m.mime_type,
        "size": m.size,
        "sha256": m.sha256,
        "uploaded_by": m.uploaded_by,
        "created_at": rfc3339(m.created_at),
    })
}

/// The writes and the fetch are boxed: their state (transactions, an HTTP
/// client) would otherwise size every call's future, reads included.
async fn run(site: &Site, actor: &Actor, tool: &str, raw: &Value) -> Result<Outcome> {
    let store = &site.store;
    let mut authors = Authors::new(site, actor);
    let out = match tool {
        "content_list" => {
            let a: ListArgs = args(tool, raw)?;
            let limit = in_range(tool, "limit", a.limit, 1, 500)?;
            let offset = in_range(tool, "offset", a.offset, 0, i64::MAX)?;
            let list = content::list(store, actor, limit, offset).await?;
            Outcome::ok(authors.entries(list).await?)
        }
        "content_read" => {
            let a: SlugArgs = args(tool, raw)?;
            let (entry, pending, joined) = if authors.public {
                // The author's display name comes with the entry: one read,
                // when that join stands for the lookup.
                let (entry, pending, joined) = content::read_named(store, actor, &a.slug).await?;
                let name = joined.and_then(|j| users::public_name_joined(&entry.author, j));
                (entry, pending, name)
            } else {
                let (entry, pending) = content::read(store, actor, &a.slug).await?;
                (entry, pending, None)
            };
            let author = match joined {
                Some(name) => name,
                None => authors.shown(&entry.author).await?,
            };
            Outcome::ok(entry_json(entry, true, author, pending))
        }
        "content_search" => {
            let a: SearchArgs = args(tool, raw)?;
            let limit = in_range(tool, "limit", a.limit, 1, 100)?;
            if a.query.trim().is_empty() {
                return Err(Error::invalid(
                    codes::TOOL_ARGUMENTS_INVALID,
                    "invalid arguments for content_search: query is empty",
                    "search for one or more words",
                ));
            }
            let list = content::search(store, actor, &a.query, limit).await?;
            Outcome::ok(authors.entries(list).await?)
        }
        "content_write_draft" => {
            let a: WriteArgs = args(tool, raw)?;
            let entry = Box::pin(content::write_draft(
                store,
                actor,
                &DraftWrite {
                    slug: &a.slug,
                    title: &a.title,
                    body: &a.body,
                    new_slug: a.new_slug.as_deref(),
                },
            ))
            .await?;
            Outcome::ok(authors.entry(actor, entry).await?)
        }
        "content_publish" => {
            let a: SlugArgs = args(tool, raw)?;
            let entry = Box::pin(content::publish(store, actor, &a.slug)).await?;
            Outcome::ok(authors.entry(actor, entry).await?)
        }
        "content_delete" => {
            let a: SlugArgs = args(tool, raw)?;
            Box::pin(content::delete(store, actor, &a.slug)).await?;
            Outcome::ok(json!({"deleted": a.slug}))
        }
        "media_list" => {
            let _: NoArgs = args(tool, raw)?;
            let list = media::list(store, actor).await?;
            Outcome::ok(json!({"media": list.iter().map(media_json).collect::<Vec<_>>()}))
        }
        "media_read" => {
            let a: FilenameArgs = args(tool, raw)?;
            let (info, bytes) = media::read(store, actor, &a.filename).await?;
            let data = media::encode_base64(&bytes);
            let mut value = media_json(&info);
            value["data_base64"] = json!(data);
            value["content_disposition"] = json!(media::content_disposition(&info));
            let mut outcome = Outcome::ok(value);
            if info.mime_type.starts_with("image/") {
                // Clients that show images get the picture as well as the JSON.
                outcome
                    .result
                    .content
                    .push(ContentBlock::image(data, info.mime_type.clone()));
            }
            outcome
        }
        "media_write" => {
            let a: MediaWriteArgs = args(tool, raw)?;
            // Permission first, so a refused caller is not told about its file.
            actor.check(crate::access::permissions::Action::MediaWrite)?;
            let bytes = media::decode_base64(&a.data_base64)?;
            let info = Box::pin(media::write(
                store,
                actor,
                &Upload {
                    filename: &a.filename,
                    mime_type: &a.mime_type,
                    bytes: &bytes,
                },
            ))
            .await?;
            Outcome::ok(media_json(&info))
        }
        "site_config_read" => {
            let _: NoArgs = args(tool, raw)?;
            Outcome::ok(json!({"config": site_config::read_all(store, actor).await?}))
        }
        "http_fetch" => {
            let a: FetchArgs = args(tool, raw)?;
            actor.check(crate::access::permissions::Action::HttpFetch)?;
            let allowlist = site_config::http_fetch_allowlist(store).await?;
            // Recorded before it is sent: an unwritable log stops the request
            // (the answer alone would be withheld, after a leak through its URL).
            let origin = url::Url::parse(&a.url).map_or_else(
                |_| "(not a URL)".to_string(),
                |u| u.origin().ascii_serialization(),
            );
            audit::record(
                store,
                audit::AuditEntry {
                    actor: &actor.label(),
                    action: AuditAction::HttpFetch,
                    subject: &origin,
                    detail: json!({"url_sha256": hex::encode(Sha256::digest(a.url.as_bytes()))}),
                },
            )
            .await?;
            let fetched = Box::pin(http_fetch::fetch(&a.url, &allowlist)).await?;
            Outcome::ok(serde_json::to_value(fetched).expect("fetch results serialise"))
        }
        other => {
            return Err(Error::new(
                codes::INPUT_INVALID,
                format!("no tool named {other}"),
            ));
        }
    };
    Ok(out)
}

/// The digest of a call's arguments the audit entry and an approval keep
/// (the arguments themselves are never stored with the call).
pub fn args_digest(args: &Value) -> String {
    crate::json::canonical_sha256(args)
}

/// Appends the `mcp.tool_call` audit entry (with where the call came from:
/// `stdio` and the client's name, or the HTTP client's address; and the
/// OAuth grant a token's call went through) and returns its seq. The caller
/// decides what a failure means (see `call_record`: the call fails closed).
pub async fn record(
    site: &Site,
    actor_label: &str,
    tool: &str,
    args_sha256: &str,
    (outcome, code): (&str, Option<Code>),
    (from, grant): (&str, Option<&str>),
) -> Result<i64> {
    let detail = CallDetail {
        args_sha256,
        code,
        from,
        grant,
        outcome,
    };
    let entry = (actor_label, AuditAction::McpToolCall, tool);
    audit::record_typed(&site.store, entry, &detail).await
}

/// A tool call's audit detail. Its fields are in the order a JSON map sorts
/// its keys, so the text is the one the entries written as a `Value` have.
#[derive(serde::Serialize)]
struct CallDetail<'a> {
    args_sha256: &'a str,
    code: Option<Code>,
    from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<&'a str>,
    outcome: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ok_outcome_is_rmcps_structured_result() {
        let value = json!({"slug": "welcome", "body": "a \"quote\"\nand é", "n": [1, 2.5, null]});
        let ok = Outcome::ok(value.clone());
        assert_eq!(ok.result, CallToolResult::structured(value));
        assert_eq!(ok.code, None);
    }

    /// The shape every content tool answers with, pending revision and all.
    #[test]
    fn an_entry_is_shown_with_every_field() {
        let e = ContentEntry {
            id: 7,
            slug: "s".into(),
            title: "T \"q\"".into(),
            body: "b\n".into(),
            status: "published".into(),
            author: "user:a@example.com".into(),
            created_at: 0,
            updated_at: 1_000,
            published_at: None,
        };
        let p = content::PendingRevision {
            title: "T2".into(),
            body: "b2".into(),
            author: "key:k".into(),
            created_at: 5,
            updated_at: 6,
        };
        let expected = json!({
            "slug": "s", "title": "T \"q\"", "status": "published", "author": "Ann",
            "created_at": rfc3339(0), "updated_at": rfc3339(1_000), "published_at": null,
            "body": "b\n",
            "pending_revision": {"title": "T2", "body": "b2", "author": "key:k", "updated_at": 6},
        });
        assert_eq!(entry_json(e.clone(), true, "Ann".into(), Some(p)), expected);
        let mut listed = expected.clone();
        listed.as_object_mut().unwrap().remove("body");
        listed.as_object_mut().unwrap().remove("pending_revision");
        assert_eq!(entry_json(e, false, "Ann".into(), None), listed);
    }

    /// A call's detail is written as the `Value` map it replaced wrote it:
    /// entries old and new read and verify alike.
    #[test]
    fn a_call_detail_is_the_text_of_its_json_map() {
        for (code, grant) in [
            (None, None),
            (Some(codes::PERMISSION_DENIED), Some("grant-1")),
        ] {
            let typed = CallDetail {
                args_sha256: "ab",
                code,
                from: "stdio \"x\"",
                grant,
                outcome: "ok",
            };
            let mut map =
                json!({"args_sha256": "ab", "outcome": "ok", "code": code, "from": "stdio \"x\""});
            if let Some(g) = grant {
                map["grant"] = json!(g);
            }
            assert_eq!(
                serde_json::to_string(&typed).unwrap(),
                serde_json::to_string(&map).unwrap()
            );
        }
    }

    /// `result_value` moves what `to_value` would copy: the same JSON for
    /// every shape of result a tool returns.
    #[test]
    fn a_result_value_is_its_serde_form() {
        let mut with_image = CallToolResult::structured(json!({"a": "x\"y", "n": [1, 2.5, null]}));
        with_image
            .content
            .push(ContentBlock::image("aGk=", "image/png"));
        let mut with_meta = CallToolResult::structured(json!({"b": true}));
        with_meta.content.push(ContentBlock::Text(
            TextContent::new("annotated")
                .with_meta(serde_json::from_value(json!({"k": 1})).unwrap()),
        ));
        with_meta.meta = Some(serde_json::from_value(json!({"m": "v"})).unwrap());
        with_meta.result_type = None;
        let results = [
            CallToolResult::structured(json!({"slug": "welcome", "body": "line\nline"})),
            Outcome::err(&Error::new(codes::CONTENT_NOT_FOUND, "no entry")).result,
            with_image,
            with_meta,
        ];
        for r in results {
            let expected = serde_json::to_value(&r).unwrap();
            assert_eq!(result_value(r), expected);
        }
    }

    #[test]
    fn equal_arguments_digest_equally() {
        assert_eq!(
            args_digest(&json!({"x": 1, "y": [2, {"b": 3, "a": 4}]})),
            args_digest(&json!({"y": [2, {"a": 4, "b": 3}], "x": 1}))
        );
        assert_ne!(args_digest(&json!({"x": 1})), args_digest(&json!({"x": 2})));
    }
}
