//! Policy (docs/decisions.md) through the real binary: the author edit model, what
//! anonymous readers learn about authors, and tool arguments held to their
//! declared schema.

use serde_json::{Value, json};

use crate::mcp_util::{McpSite, tool_error};
use crate::util::TestSite;

fn structured(r: &Value) -> Value {
    assert_ne!(r["result"]["isError"], true, "tool failed: {r}");
    r["result"]["structuredContent"].clone()
}

fn read_as(site: &TestSite, actor: &[&str], slug: &str) -> Value {
    let mut m = site.mcp(actor, &[]);
    m.initialize("2025-06-18");
    structured(&m.call(1, "content_read", json!({"slug": slug}), None))
}

fn write(site: &TestSite, actor: &[&str], args: Value) -> Value {
    let mut m = site.mcp(actor, &[]);
    m.initialize("2025-06-18");
    m.call(1, "content_write_draft", args, None)
}

fn publish(site: &TestSite, slug: &str) -> Value {
    let mut m = site.mcp(&["--email", "editor@example.com"], &[]);
    m.initialize("2025-06-18");
    structured(&m.call(1, "content_publish", json!({"slug": slug}), None))
}

#[test]
fn author_cannot_rewrite_unpublish_or_rename_an_admins_entry() {
    let site = TestSite::new("author_others");
    let before = read_as(&site, &[], "welcome");
    // A draft write used to replace the text and unpublish the entry.
    let r = write(
        &site,
        &["--email", "author@example.com"],
        json!({"slug": "welcome", "title": "pwned", "body": "pwned", "new_slug": "gone"}),
    );
    let e = tool_error(&r);
    assert_eq!(e["code"], "PERMISSION_DENIED", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("content_edit_others")
    );
    let after = read_as(&site, &[], "welcome");
    assert_eq!(after["title"], before["title"]);
    assert_eq!(after["status"], "published");
    // An editor may edit anyone's entry.
    let r = write(
        &site,
        &["--email", "editor@example.com"],
        json!({"slug": "roadmap-draft", "title": "Roadmap v2", "body": "b"}),
    );
    assert_eq!(
        structured(&r)["title"],
        "Roadmap v2",
        "editors edit all entries"
    );
}

#[test]
fn editing_a_published_entry_keeps_it_live_until_published_again() {
    let site = TestSite::new("author_pending");
    let author = ["--email", "author@example.com"];
    structured(&write(
        &site,
        &author,
        json!({"slug": "my-post", "title": "First", "body": "first text"}),
    ));
    publish(&site, "my-post");
    // The author edits their own published entry: a pending revision.
    let r = structured(&write(
        &site,
        &author,
        json!({"slug": "my-post", "title": "Second", "body": "second text"}),
    ));
    assert_eq!(r["status"], "published");
    assert_eq!(r["title"], "First");
    assert_eq!(r["pending_revision"]["title"], "Second");
    // content_read gives its author the entry and the pending revision (read
    // together in one statement)…
    let mine = read_as(&site, &author, "my-post");
    assert_eq!(mine["title"], "First");
    assert_eq!(mine["pending_revision"]["title"], "Second");
    assert_eq!(mine["pending_revision"]["body"], "second text");
    // …while anonymous readers still see the published text, and no pending revision.
    let public = read_as(&site, &[], "my-post");
    assert_eq!(public["body"], "first text");
    assert!(public.get("pending_revision").is_none(), "{public}");
    // Renaming a published entry changes a live address: editors only.
    let e = tool_error(&write(
        &site,
        &author,
        json!({"slug": "my-post", "title": "Second", "body": "second text", "new_slug": "moved"}),
    ));
    assert_eq!(e["code"], "PERMISSION_DENIED");
    // Publishing applies the revision.
    let published = publish(&site, "my-post");
    assert_eq!(published["title"], "Second");
    assert!(published.get("pending_revision").is_none());
    assert_eq!(read_as(&site, &[], "my-post")["body"], "second text");
    let actions: Vec<String> = site
        .audit()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect();
    assert!(
        actions.contains(&"content.revise".to_string()),
        "{actions:?}"
    );
}

#[test]
fn anonymous_readers_see_a_display_name_never_a_key_id_or_email() {
    let site = TestSite::new("author_names");
    let (key, key_id) = site.mint("author");
    let mut m = site.mcp(&[], &[("GATEHOUSE_API_KEY", &key)]);
    m.initialize("2025-06-18");
    structured(&m.call(
        1,
        "content_write_draft",
        json!({"slug": "by-key", "title": "By a key", "body": "zebra"}),
        None,
    ));
    drop(m);
    structured(&write(
        &site,
        &["--email", "author@example.com"],
        json!({"slug": "by-user", "title": "By a user", "body": "zebra"}),
    ));
    site.ok(&[
        "users",
        "update",
        "--email",
        "author@example.com",
        "--display-name",
        "Ada L.",
    ]);
    publish(&site, "by-key");
    publish(&site, "by-user");

    let mut public = site.mcp(&[], &[]);
    public.initialize("2025-06-18");
    let outputs = [
        structured(&public.call(1, "content_list", json!({}), None)),
        structured(&public.call(2, "content_search", json!({"query": "zebra"}), None)),
        structured(&public.call(3, "content_read", json!({"slug": "by-key"}), None)),
        structured(&public.call(4, "content_read", json!({"slug": "by-user"}), None)),
        structured(&public.call(5, "content_read", json!({"slug": "welcome"}), None)),
    ];
    let text = outputs.iter().map(Value::to_string).collect::<String>();
    assert!(!text.contains(&key_id), "a key id leaked: {text}");
    assert!(!text.contains("key:"), "{text}");
    assert!(!text.contains('@'), "an email leaked: {text}");
    assert_eq!(outputs[2]["author"], "site author");
    assert_eq!(outputs[3]["author"], "Ada L.");
    // Viewers and above still see who wrote what.
    assert_eq!(
        read_as(&site, &["--email", "viewer@example.com"], "by-key")["author"],
        format!("key:{key_id}")
    );
}

#[test]
fn declared_argument_lengths_are_enforced_for_every_tool() {
    let site = TestSite::new("schema_limits");
    let mut m = site.mcp(&["--email", "admin@example.com"], &[]);
    m.initialize("2025-06-18");
    let body = "b".repeat(1_000_001);
    let cases = [
        (
            "content_write_draft",
            json!({"slug": "long", "title": "t", "body": body}),
            "/body",
        ),
        (
            "content_search",
            json!({"query": "q".repeat(501)}),
            "/query",
        ),
        ("content_read", json!({"slug": "s".repeat(101)}), "/slug"),
        ("content_list", json!({"limit": 501}), "/limit"),
        ("media_read", json!({"filename": ""}), "/filename"),
        ("http_fetch", json!({"url": 5}), "/url"),
    ];
    for (i, (tool, args, at)) in cases.into_iter().enumerate() {
        let e = tool_error(&m.call(i as i64 + 1, tool, args, None));
        assert_eq!(e["code"], "TOOL_ARGUMENTS_INVALID", "{tool}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(at), "{tool}: {message}");
        assert!(
            message.len() < 400,
            "the value must not be echoed: {message}"
        );
    }
    drop(m);
    // Nothing was written.
    let mut admin = site.mcp(&["--email", "admin@example.com"], &[]);
    admin.initialize("2025-06-18");
    let e = tool_error(&admin.call(1, "content_read", json!({"slug": "long"}), None));
    assert_eq!(e["code"], "CONTENT_NOT_FOUND");
}

#[test]
fn nul_in_a_search_query_is_invalid_input_not_a_storage_error() {
    let site = TestSite::new("search_nul");
    let mut m = site.mcp(&[], &[]);
    m.initialize("2025-06-18");
    let e = tool_error(&m.call(1, "content_search", json!({"query": "wel\u{0}come"}), None));
    assert_eq!(e["code"], "TOOL_ARGUMENTS_INVALID", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("/query: contains a NUL"),
        "{e}"
    );
    // The server is fine afterwards.
    let r = m.call(2, "content_search", json!({"query": "welcome"}), None);
    assert!(!structured(&r)["entries"].as_array().unwrap().is_empty());
}
