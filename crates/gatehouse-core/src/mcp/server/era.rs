//! Protocol versions and eras: which model a request is served under.
//!
//! - **Modern** (2026-07-28): no handshake. A request whose `params._meta`
//!   carries `io.modelcontextprotocol/protocolVersion` is served statelessly
//!   under that version; `clientCapabilities` is then required too, and an
//!   unknown version gets `UnsupportedProtocolVersionError` (-32022).
//! - **Legacy** (2025-11-25 and earlier): `initialize` negotiates a version
//!   for the rest of the process; requests without per-request metadata are
//!   served under it.
//!
//! A dual-era server may serve both on one stdio process (versioning page,
//! "Backward Compatibility"), so the choice is made per request, never locked
//! in by the first message.

use crate::mcp::wire::jsonrpc::{ErrorCode, ErrorData};
use serde_json::{Map, Value, json};

use crate::mcp::wire::jsonrpc::invalid_params;

pub use crate::mcp::wire::revisions::{
    LEGACY, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO,
    MODERN,
};
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Every version this server speaks, newest first.
pub fn supported() -> Vec<&'static str> {
    std::iter::once(MODERN)
        .chain(LEGACY.iter().copied())
        .collect()
}

/// Whether results for `version` carry `resultType` and the other 2026-07-28 fields.
/// ISO dates compare correctly as strings.
pub fn is_modern(version: &str) -> bool {
    version >= MODERN
}

/// The version `initialize` answers with: the client's, if it is a handshake
/// revision we speak, else our newest handshake revision (the client then
/// decides whether it can continue).
pub fn negotiate(requested: &str) -> &'static str {
    LEGACY
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LEGACY[0])
}

/// The spec's error for a version the server does not implement.
pub fn unsupported_version(requested: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        Some(json!({"supported": supported(), "requested": requested})),
    )
}

/// The per-request metadata of a modern request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    pub version: String,
    pub client_capabilities: Map<String, Value>,
}

/// Reads the per-request metadata: `Ok(None)` when the request names no
/// protocol version (so it is a legacy-era request).
pub fn request_meta(params: Option<&Map<String, Value>>) -> Result<Option<RequestMeta>, ErrorData> {
    let Some(meta) = params.and_then(|p| p.get("_meta")) else {
        return Ok(None);
    };
    let Some(meta) = meta.as_object() else {
        return Err(invalid_params(
            "Invalid params: \"_meta\" must be an object",
        ));
    };
    let Some(version) = meta.get(META_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let Some(version) = version.as_str() else {
        return Err(invalid_params(format!(
            "Invalid params: _meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
        )));
    };
    if !supported().contains(&version) {
        return Err(unsupported_version(&crate::mcp::wire::jsonrpc::shorten(
            version, 40,
        )));
    }
    let client_capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(c)) => c.clone(),
        _ => {
            return Err(invalid_params(format!(
                "Invalid params: a request naming a protocol version in _meta must also carry _meta[\"{META_CLIENT_CAPABILITIES}\"] (an object)"
            )));
        }
    };
    Ok(Some(RequestMeta {
        version: version.to_string(),
        client_capabilities,
    }))
}

/// The error for a request that has neither per-request metadata nor a handshake.
pub fn missing_meta() -> ErrorData {
    invalid_params(format!(
        "Invalid params: the request has no _meta[\"{META_PROTOCOL_VERSION}\"] and no initialize handshake was made; send {MODERN} per-request metadata, or initialize first"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn negotiation_echoes_known_handshake_versions() {
        for v in LEGACY {
            assert_eq!(negotiate(v), *v);
        }
        assert_eq!(negotiate("2026-07-28"), "2025-11-25");
        assert_eq!(negotiate("1999-01-01"), "2025-11-25");
    }

    #[test]
    fn modern_meta_is_read_and_checked() {
        let p = params(
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}),
        );
        assert_eq!(
            request_meta(Some(&p)).unwrap().unwrap().version,
            "2026-07-28"
        );
        assert_eq!(request_meta(None).unwrap(), None);
        assert_eq!(
            request_meta(Some(&params(json!({"_meta": {}})))).unwrap(),
            None
        );
        let p = params(
            json!({"_meta": {META_PROTOCOL_VERSION: "1900-01-01", META_CLIENT_CAPABILITIES: {}}}),
        );
        let e = request_meta(Some(&p)).unwrap_err();
        assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "1900-01-01");
        let p = params(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}));
        assert_eq!(
            request_meta(Some(&p)).unwrap_err().code,
            ErrorCode::INVALID_PARAMS
        );
    }
}
