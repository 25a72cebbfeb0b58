//! The MCP revisions the client speaks and the messages it builds.
//!
//! Modern (2026-07-28): no handshake; every request carries
//! `_meta.io.modelcontextprotocol/protocolVersion` and `clientCapabilities`;
//! `server/discover` is the stdio probe. Legacy (2025-11-25 back to 2024-11-05):
//! `initialize`, then `notifications/initialized`.

use serde_json::{Value, json};

pub use crate::mcp::wire::revisions::{
    LEGACY, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO,
    MODERN,
};

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// `UnsupportedProtocolVersionError`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Codes the 2026-07-28 revision reserves for itself: an answer with one of
/// them comes from a modern server.
pub fn is_modern_error(code: i64) -> bool {
    (-32099..=-32020).contains(&code)
}

/// Which protocol family a connection negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    Modern,
    Legacy,
}

impl Era {
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

pub fn client_info() -> Value {
    json!({"name": "gatehouse", "version": env!("CARGO_PKG_VERSION")})
}

/// The `_meta` every modern request carries.
pub fn modern_meta() -> Value {
    json!({
        META_PROTOCOL_VERSION: MODERN,
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: client_info(),
    })
}

/// A JSON-RPC error object from the server.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RpcError {
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One parsed stdout line.
#[derive(Debug)]
pub enum Incoming {
    Response {
        id: u64,
        outcome: Result<Value, RpcError>,
    },
    /// A response whose id is not one of ours (not a number we issued).
    StrayResponse,
    Request {
        id: Value,
        method: String,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// Parses one line; `None` when it is not a JSON-RPC message at all.
pub fn parse_line(line: &[u8]) -> Option<Incoming> {
    let mut v: Value = serde_json::from_slice(line).ok()?;
    let obj = v.as_object_mut()?;
    if let Some(method) = obj
        .get("method")
        .and_then(|m| m.as_str())
        .map(str::to_owned)
    {
        return Some(match obj.remove("id") {
            Some(id) if !id.is_null() => Incoming::Request { id, method },
            _ => Incoming::Notification {
                method,
                params: obj.remove("params").unwrap_or(Value::Null),
            },
        });
    }
    let id = obj.get("id")?.as_u64();
    let outcome = if let Some(result) = obj.remove("result") {
        Ok(result)
    } else {
        Err(serde_json::from_value(obj.remove("error")?).ok()?)
    };
    Some(match id {
        Some(id) => Incoming::Response { id, outcome },
        None => Incoming::StrayResponse,
    })
}

/// A request line (with its newline).
pub fn request_line(id: u64, method: &str, params: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .unwrap_or_default();
    out.push(b'\n');
    out
}

/// A `tools/call` request line built by hand around the already-serialised
/// arguments (the hot path: no intermediate `Value`). Its `_meta` carries, for
/// a modern server, the per-request version and capabilities, and, when the
/// caller watches for inactivity, a progress token (the request id): without
/// an inactivity timer progress changes nothing, so the server is not asked.
pub fn tools_call_line(
    id: u64,
    tool: &str,
    args_json: &[u8],
    modern: bool,
    progress: bool,
) -> Vec<u8> {
    static MODERN_META: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let name = serde_json::to_string(tool).unwrap_or_default();
    let mut out = Vec::with_capacity(args_json.len() + name.len() + 256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":\"tools/call\",\"params\":{\"name\":");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b",\"arguments\":");
    out.extend_from_slice(if args_json.is_empty() {
        b"{}"
    } else {
        args_json
    });
    if modern || progress {
        out.extend_from_slice(b",\"_meta\":{");
        if modern {
            let meta = MODERN_META.get_or_init(|| {
                let full = modern_meta().to_string();
                // Without its braces, to splice the progress token in.
                full[1..full.len() - 1].to_string()
            });
            out.extend_from_slice(meta.as_bytes());
        }
        if progress {
            if modern {
                out.push(b',');
            }
            out.extend_from_slice(b"\"progressToken\":");
            out.extend_from_slice(id.to_string().as_bytes());
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}\n");
    out
}

/// A notification line (with its newline).
pub fn notification_line(method: &str, params: &Value) -> Vec<u8> {
    let mut out =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .unwrap_or_default();
    out.push(b'\n');
    out
}

/// The answer to a server-to-client request: `ping` gets `{}`, anything else
/// a clean "method not found".
pub fn answer_server_request(id: &Value, method: &str) -> Vec<u8> {
    let msg = if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": METHOD_NOT_FOUND,
            "message": format!("Method not found: this client does not support {method}"),
        }})
    };
    let mut out = serde_json::to_vec(&msg).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_message_kinds() {
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#),
            Some(Incoming::Response {
                id: 7,
                outcome: Ok(_)
            })
        ));
        match parse_line(br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"nope"}}"#) {
            Some(Incoming::Response {
                id: 8,
                outcome: Err(e),
            }) => assert_eq!(e.code, -32601),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#),
            Some(Incoming::Request { .. })
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}"#),
            Some(Incoming::Notification { .. })
        ));
        assert!(matches!(
            parse_line(br#"{"id":"x","result":1}"#),
            Some(Incoming::StrayResponse)
        ));
        assert!(parse_line(b"hello world").is_none());
        assert!(parse_line(b"[1,2]").is_none());
        assert!(parse_line(br#"{"id":1}"#).is_none());
    }

    #[test]
    fn refuses_unsupported_server_requests_cleanly() {
        let ping: Value =
            serde_json::from_slice(&answer_server_request(&json!("a"), "ping")).unwrap();
        assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "a", "result": {}}));
        let other: Value =
            serde_json::from_slice(&answer_server_request(&json!(5), "sampling/createMessage"))
                .unwrap();
        assert_eq!(other["error"]["code"], -32601);
        assert_eq!(other["id"], 5);
    }

    #[test]
    fn hand_built_tools_call_line_is_the_json_it_means() {
        let args = serde_json::to_vec(&json!({"message": "he said \"hi\"\n"})).unwrap();
        for (modern, progress) in [(true, true), (true, false), (false, true), (false, false)] {
            let line = tools_call_line(7, "ec\"ho", &args, modern, progress);
            assert_eq!(line.last(), Some(&b'\n'));
            let v: Value = serde_json::from_slice(&line).unwrap();
            let mut params =
                json!({"name": "ec\"ho", "arguments": {"message": "he said \"hi\"\n"}});
            if modern {
                params["_meta"] = modern_meta();
            }
            if progress {
                params["_meta"]["progressToken"] = json!(7);
            }
            assert_eq!(
                v,
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}),
                "modern {modern}, progress {progress}"
            );
        }
    }

    #[test]
    fn modern_error_range() {
        assert!(is_modern_error(UNSUPPORTED_PROTOCOL_VERSION));
        assert!(!is_modern_error(METHOD_NOT_FOUND));
        assert!(!is_modern_error(-32002));
    }
}
