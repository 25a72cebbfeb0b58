//! Calls the server a remote entry names, for the doctor: `initialize`, then
//! `tools/list`, over Streamable HTTP with the entry's key as a bearer token.
//!
//! The requests follow the 2025-06-18 revision (JSON or an event stream back;
//! any `Mcp-Session-Id` echoed), which every Gatehouse server and the other
//! servers a doctor may meet answer. Redirects are not followed: a redirect
//! would carry the key to another origin. The result names what the server
//! said: who it is, whether it took the key, and what the key may see.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::access::keys::RawKey;

/// What a client sends as the protocol revision.
const VERSION: &str = "2025-06-18";
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the server at a URL said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Probe {
    /// It answered both calls.
    Answered {
        /// `serverInfo.name` and `.version`.
        server: String,
        version: String,
        /// The tools the key (or the anonymous caller) may see.
        tools: Vec<String>,
        /// Who the server says the caller is (a Gatehouse server's
        /// `initialize` names its actor in `_meta`), in words.
        actor: Option<String>,
    },
    /// It refused the credentials (HTTP 401 or 403), with its message.
    Refused { status: u16, message: String },
    /// It could not be reached, or did not speak MCP; the reason.
    Failed(String),
}

/// `initialize` then `tools/list` at `url`, as `key` (or anonymously).
pub(super) async fn probe(url: &str, key: Option<&RawKey>) -> Probe {
    match run(url, key).await {
        Ok(probe) | Err(probe) => probe,
    }
}

async fn run(url: &str, key: Option<&RawKey>) -> std::result::Result<Probe, Probe> {
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .user_agent(concat!("gatehouse-doctor/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Probe::Failed(format!("cannot set up the HTTP client: {e}")))?;
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    if let Some(key) = key {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
            .map_err(|_| Probe::Failed("the key cannot be sent in a header".into()))?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "gatehouse-doctor", "version": crate::version()},
        },
    });
    let (result, session) = call(&client, url, &headers, &init).await?;
    let negotiated = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or(VERSION)
        .to_string();
    let info = result.get("serverInfo").cloned().unwrap_or(Value::Null);
    let actor = result
        .get("_meta")
        .and_then(|m| m.get(ACTOR_META))
        .and_then(describe_actor);
    let text = |k: &str| {
        info.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Ok(value) = HeaderValue::from_str(&negotiated) {
        headers.insert("mcp-protocol-version", value);
    }
    if let Some(session) = session {
        headers.insert("mcp-session-id", session);
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = client
        .post(url)
        .headers(headers.clone())
        .body(note.to_string())
        .send()
        .await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (listed, _) = call(&client, url, &headers, &list).await?;
    let tools = listed
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| Some(t.get("name")?.as_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default();
    Ok(Probe::Answered {
        server: text("name"),
        version: text("version"),
        tools,
        actor,
    })
}

/// Where a Gatehouse server's `initialize` result names the caller's actor.
const ACTOR_META: &str = crate::mcp::server::handler::ACTOR_META;

/// An actor as `whoami --json` shapes it, in words: "key abc (roles editor)",
/// "user a@b.c (roles admin)", "the anonymous public actor".
fn describe_actor(actor: &Value) -> Option<String> {
    let roles: Vec<&str> = actor
        .get("roles")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let roles = format!("roles {}", roles.join(", "));
    let field = |k: &str| actor.get(k).and_then(Value::as_str);
    Some(match field("kind")? {
        "api_key" => format!("key {} ({roles})", field("key_id")?),
        "user" => format!("user {} ({roles})", field("email")?),
        "public" => "the anonymous public actor".to_string(),
        other => format!("a {other} actor ({roles})"),
    })
}

/// One request; its `result`, and the session id the server handed out.
async fn call(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    body: &Value,
) -> std::result::Result<(Value, Option<HeaderValue>), Probe> {
    let response = client
        .post(url)
        .headers(headers.clone())
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| Probe::Failed(format!("cannot reach it: {}", without_url(&e))))?;
    let status = response.status();
    let session = response.headers().get("mcp-session-id").cloned();
    let stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = response
        .text()
        .await
        .map_err(|e| Probe::Failed(format!("the answer broke off: {}", without_url(&e))))?;
    let message = if stream {
        from_stream(&text)
    } else {
        serde_json::from_str(&text).ok()
    };
    let error = message.as_ref().and_then(|m| m.get("error")).map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    });
    if matches!(status.as_u16(), 401 | 403) {
        return Err(Probe::Refused {
            status: status.as_u16(),
            message: error.unwrap_or_else(|| status.to_string()),
        });
    }
    if let Some(error) = error {
        return Err(Probe::Failed(format!("it answered with an error: {error}")));
    }
    if !status.is_success() {
        return Err(Probe::Failed(format!("it answered HTTP {status}")));
    }
    match message.and_then(|mut m| m.get_mut("result").map(Value::take)) {
        Some(result) => Ok((result, session)),
        None => Err(Probe::Failed("its answer is not an MCP result".into())),
    }
}

/// The first JSON-RPC response in an event stream.
fn from_stream(text: &str) -> Option<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}

/// What went wrong, without reqwest's message, which repeats the URL (the
/// report names it already).
fn without_url(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    match std::error::Error::source(e) {
        Some(source) => format!("{what}: {source}"),
        None => what.to_string(),
    }
}

fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
