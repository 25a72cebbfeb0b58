//! JSON-RPC 2.0 messages: telling a line apart into request, notification or
//! response, and the error replies for everything malformed.
//!
//! MCP narrows JSON-RPC: ids are strings or integers (never null), params are
//! objects. Anything that is not JSON gets -32700 with a null id; JSON that is
//! not a valid message gets -32600, with the id when one could be read.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Map, Value, json};

/// A classified incoming message.
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
    /// A response from the client. Gatehouse sends no requests, so these are dropped.
    Response,
}

/// Why a message was refused, and the reply to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub id: Value,
    pub error: ErrorData,
}

/// The error of a line that is not JSON at all.
pub fn parse_error(detail: &str) -> Refusal {
    Refusal {
        id: Value::Null,
        error: ErrorData::new(
            ErrorCode::PARSE_ERROR,
            format!("Parse error: {detail}"),
            None,
        ),
    }
}

pub fn invalid_request(id: Value, message: impl Into<String>) -> Refusal {
    Refusal {
        id,
        error: ErrorData::new(ErrorCode::INVALID_REQUEST, message.into(), None),
    }
}

/// A valid request id: a string or an integer.
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some() || id.as_u64().is_some()
}

/// Classifies one JSON value (one element, if the line was a batch).
pub fn classify(value: Value) -> Result<Message, Refusal> {
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
                    return Err(Refusal {
                        id: reply_id,
                        error: ErrorData::new(
                            ErrorCode::INVALID_PARAMS,
                            "Invalid params: \"params\" must be an object",
                            None,
                        ),
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
            Ok(Message::Response)
        }
        None => Err(invalid_request(
            reply_id,
            "Invalid Request: a message needs a \"method\" (or is a response)",
        )),
    }
}

/// A success response line.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response line.
pub fn error_response(id: &Value, error: &ErrorData) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(p) => json!({"jsonrpc": "2.0", "method": method, "params": p}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
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

/// Caller-controlled text is cut before it is echoed or logged.
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

    fn code(r: Result<Message, Refusal>) -> (i32, Value) {
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
            Ok(Message::Response)
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
    fn shorten_keeps_char_boundaries() {
        assert_eq!(shorten("héllo", 2), "h…");
        assert_eq!(shorten("abc", 5), "abc");
    }
}
