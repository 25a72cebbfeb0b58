//! JSON-RPC 2.0 as MCP narrows it: one [`Message`] type, one error type
//! ([`ErrorData`], rmcp's) and one set of codes ([`ErrorCode`], rmcp's), for
//! both sides.
//!
//! Reading: [`classify`] is the server's strict reading of a parsed value
//! (ids are strings or integers, never null; params are objects): anything
//! else is a [`Rejection`] carrying the error reply. [`parse_line`] is the
//! client's reading of a child's stdout line: lenient where servers in the
//! wild are sloppy (a missing `"jsonrpc"`, a null id on a notification), and
//! `None` for what is not JSON-RPC at all (counted as a violation).
//!
//! Writing: [`response`], [`error_response`] and [`notification`] build
//! values (the server serialises them on its writer task); [`request_line`],
//! [`notification_line`] and [`line`](fn@line) build newline-terminated bytes.

pub use rmcp::model::{ErrorCode, ErrorData};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A classified message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Map<String, Value>>,
    },
    Notification {
        method: String,
        params: Option<Map<String, Value>>,
    },
    /// A response: its id and either the result or the error.
    Response {
        id: Value,
        outcome: Result<Value, ErrorData>,
    },
}

/// Why the server refused a message, and the reply to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub id: Value,
    pub error: ErrorData,
}

/// Codes the 2026-07-28 revision reserves for itself: an answer with one of
/// them comes from a modern server.
pub fn is_modern_error(code: ErrorCode) -> bool {
    (-32099..=-32020).contains(&code.0)
}

/// The error of a line that is not JSON at all.
pub fn parse_error(detail: &str) -> Rejection {
    Rejection {
        id: Value::Null,
        error: ErrorData::new(
            ErrorCode::PARSE_ERROR,
            format!("Parse error: {detail}"),
            None,
        ),
    }
}

pub fn invalid_request(id: Value, message: impl Into<String>) -> Rejection {
    Rejection {
        id,
        error: ErrorData::new(ErrorCode::INVALID_REQUEST, message.into(), None),
    }
}

/// A valid request id: a string or an integer.
/// A request id as MCP has them: a string or an integer.
pub fn valid_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some() || id.as_u64().is_some()
}

/// A response's error object, read leniently (a missing message is empty).
#[derive(Deserialize)]
struct WireError {
    code: i32,
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

fn read_error(v: Value) -> Option<ErrorData> {
    let e: WireError = serde_json::from_value(v).ok()?;
    Some(ErrorData::new(ErrorCode(e.code), e.message, e.data))
}

/// [`classify`]'s reading of a request line in its usual shape (an object
/// with `"jsonrpc": "2.0"`, a string or integer `id`, a string `method` and
/// an object `params`), read straight into those parts: the map of the whole
/// message is never built, nor taken apart again. `None` for every other
/// line, which the caller then parses and classifies as before.
pub fn usual_request(text: &[u8]) -> Option<Message> {
    /// A member as given, `null` included (serde reads a `null` into `None`).
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
    #[derive(Deserialize)]
    struct Usual<'a> {
        #[serde(borrow)]
        jsonrpc: std::borrow::Cow<'a, str>,
        #[serde(default, deserialize_with = "present")]
        id: Option<Value>,
        method: String,
        #[serde(default, deserialize_with = "present")]
        params: Option<Value>,
    }
    // A struct reads an array positionally too: a batch is never one.
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    // Fails on duplicate members, where the full reading keeps the last.
    let usual: Usual = serde_json::from_slice(text).ok()?;
    match (usual.jsonrpc.as_ref(), usual.id, usual.params) {
        ("2.0", Some(id), Some(Value::Object(params))) if valid_id(&id) => Some(Message::Request {
            id,
            method: usual.method,
            params: Some(params),
        }),
        _ => None,
    }
}

/// The server's strict reading of one JSON value (one element, if the line
/// was a batch).
pub fn classify(value: Value) -> Result<Message, Rejection> {
    let Value::Object(mut obj) = value else {
        return Err(invalid_request(
            Value::Null,
            "Invalid Request: a message must be a JSON object",
        ));
    };
    let id = obj.remove("id");
    let reply_id = id.clone().filter(valid_id).unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid_request(
            reply_id,
            "Invalid Request: \"jsonrpc\" must be \"2.0\"",
        ));
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = match obj.remove("params") {
                None => None,
                Some(Value::Object(p)) => Some(p),
                Some(_) => {
                    return Err(Rejection {
                        id: reply_id,
                        error: invalid_params("Invalid params: \"params\" must be an object"),
                    });
                }
            };
            match id {
                None => Ok(Message::Notification { method, params }),
                Some(id) if valid_id(&id) => Ok(Message::Request { id, method, params }),
                Some(_) => Err(invalid_request(
                    Value::Null,
                    "Invalid Request: \"id\" must be a string or an integer",
                )),
            }
        }
        Some(_) => Err(invalid_request(
            reply_id,
            "Invalid Request: \"method\" must be a string",
        )),
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            let outcome = match obj.remove("result") {
                Some(result) => Ok(result),
                None => Err(obj
                    .remove("error")
                    .and_then(read_error)
                    .unwrap_or_else(|| invalid_request(Value::Null, "malformed error").error)),
            };
            Ok(Message::Response {
                id: id.unwrap_or_default(),
                outcome,
            })
        }
        None => Err(invalid_request(
            reply_id,
            "Invalid Request: a message needs a \"method\" (or is a response)",
        )),
    }
}

/// The client's lenient reading of one stdout line; `None` when it is not a
/// JSON-RPC message at all.
pub fn parse_line(line: &[u8]) -> Option<Message> {
    let mut v: Value = serde_json::from_slice(line).ok()?;
    let obj = v.as_object_mut()?;
    if let Some(Value::String(method)) = obj.remove("method") {
        let params = match obj.remove("params") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        return Some(match obj.remove("id") {
            Some(id) if !id.is_null() => Message::Request { id, method, params },
            _ => Message::Notification { method, params },
        });
    }
    let id = obj.remove("id")?;
    let outcome = match obj.remove("result") {
        Some(result) => Ok(result),
        None => Err(read_error(obj.remove("error")?)?),
    };
    Some(Message::Response { id, outcome })
}

/// A success response. Built by moving `result` in: `json!` would copy the
/// whole result (a tool's answer, its body twice) value by value.
pub fn response(id: &Value, result: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("id".into(), id.clone());
    m.insert("result".into(), result);
    Value::Object(m)
}

/// An error response.
pub fn error_response(id: &Value, error: &ErrorData) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(p) => {
            let mut m = Map::new();
            m.insert("jsonrpc".into(), Value::from("2.0"));
            m.insert("method".into(), Value::from(method));
            m.insert("params".into(), p);
            Value::Object(m)
        }
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// `message` as one line, with its newline.
pub fn line(message: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_line(&mut out, message);
    out
}

/// [`line()`], appended to `out`.
pub fn write_line(out: &mut Vec<u8>, message: &Value) {
    serde_json::to_writer(&mut *out, message).expect("a JSON value serialises");
    out.push(b'\n');
}

/// A request line (with its newline).
pub fn request_line(id: u64, method: &str, params: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification line (with its newline).
pub fn notification_line(method: &str, params: &Value) -> Vec<u8> {
    line(&notification(method, Some(params.clone())))
}

pub fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {}", shorten(method, 100)),
        None,
    )
}

pub fn invalid_params(message: impl Into<String>) -> ErrorData {
    ErrorData::new(ErrorCode::INVALID_PARAMS, message.into(), None)
}

pub fn internal_error(message: impl Into<String>) -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, message.into(), None)
}

/// Peer-controlled text is cut before it is echoed or logged.
pub fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where it reads a line at all, the usual shape's reading is
    /// [`classify`]'s; it leaves every unusual line to it.
    #[test]
    fn the_usual_requests_reading_is_classifys() {
        let usual = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"content_read","arguments":{"slug":"a"}}}"#,
            r#"  {"params":{},"method":"ping","id":"x","jsonrpc":"2.0","extra":[1,{"a":null}]}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m","params":{"_meta":{}},"result":1}"#,
            r#"{"jsonr\u0070c":"2.0","id":-3,"method":"m\n","params":{}}"#,
        ];
        let unusual = [
            r#"{"jsonrpc":"2.0","id":null,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m","params":{}}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7,"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m","params":{}}"#,
            r#"["2.0",1,"m",{}]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m","params":{}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}} x"#,
        ];
        for line in usual {
            let full = classify(serde_json::from_str(line).unwrap()).ok();
            assert!(full.is_some(), "{line}");
            assert_eq!(usual_request(line.as_bytes()), full, "{line}");
        }
        for line in unusual {
            assert_eq!(usual_request(line.as_bytes()), None, "{line}");
        }
    }

    fn code(r: Result<Message, Rejection>) -> (i32, Value) {
        let r = r.unwrap_err();
        (r.error.code.0, r.id)
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            Ok(Message::Request { .. })
        ));
        assert!(matches!(
            classify(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            Ok(Message::Notification { .. })
        ));
        assert_eq!(
            classify(json!({"jsonrpc":"2.0","id":"x","result":{}})),
            Ok(Message::Response {
                id: json!("x"),
                outcome: Ok(json!({}))
            })
        );
    }

    #[test]
    fn malformed_messages_are_refused_with_the_right_code() {
        assert_eq!(code(classify(json!([1]))), (-32600, Value::Null));
        assert_eq!(
            code(classify(json!({"jsonrpc":"1.0","id":7,"method":"ping"}))),
            (-32600, json!(7))
        );
        assert_eq!(
            code(classify(json!({"id":7,"method":"ping"}))),
            (-32600, json!(7))
        );
        assert_eq!(
            code(classify(json!({"jsonrpc":"2.0","id":null,"method":"ping"}))),
            (-32600, Value::Null)
        );
        assert_eq!(
            code(classify(json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}))),
            (-32600, Value::Null)
        );
        assert_eq!(
            code(classify(json!({"jsonrpc":"2.0","id":2,"method":5}))),
            (-32600, json!(2))
        );
        assert_eq!(
            code(classify(
                json!({"jsonrpc":"2.0","id":3,"method":"x","params":[1]})
            )),
            (-32602, json!(3))
        );
        assert_eq!(
            code(classify(json!({"jsonrpc":"2.0","id":4}))),
            (-32600, json!(4))
        );
    }

    #[test]
    fn the_client_parses_the_message_kinds_leniently() {
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#),
            Some(Message::Response { outcome: Ok(_), .. })
        ));
        match parse_line(br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"nope"}}"#) {
            Some(Message::Response {
                id,
                outcome: Err(e),
            }) => {
                assert_eq!((id, e.code), (json!(8), ErrorCode::METHOD_NOT_FOUND))
            }
            other => panic!("{other:?}"),
        }
        match parse_line(br#"{"id":9,"error":{"code":-32000}}"#) {
            Some(Message::Response {
                outcome: Err(e), ..
            }) => assert_eq!(e.message, ""),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#),
            Some(Message::Request { .. })
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":null,"method":"notifications/progress","params":{"progressToken":3}}"#),
            Some(Message::Notification { params: Some(_), .. })
        ));
        assert!(parse_line(b"hello world").is_none());
        assert!(parse_line(b"[1,2]").is_none());
        assert!(parse_line(br#"{"id":1}"#).is_none());
        assert!(parse_line(br#"{"id":1,"error":"bad"}"#).is_none());
    }

    #[test]
    fn modern_error_range() {
        assert!(is_modern_error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION));
        assert!(!is_modern_error(ErrorCode::METHOD_NOT_FOUND));
        assert!(!is_modern_error(ErrorCode(-32002)));
    }

    #[test]
    fn shorten_keeps_char_boundaries() {
        assert_eq!(shorten("héllo", 2), "h…");
        assert_eq!(shorten("abc", 5), "abc");
    }
}
