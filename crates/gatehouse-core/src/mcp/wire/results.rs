//! The results the client reads during setup, as types: `server/discover`,
//! `initialize` and `tools/list`.
//!
//! rmcp's model types are strict (a server info without `version`, a tool
//! without `inputSchema`, a hint of the wrong type fail the whole result);
//! servers in the wild are not, and the client has always taken what it could
//! read. So these are small types of our own with the same tolerance: a field
//! of the wrong type reads as absent, a malformed tool is skipped, and a
//! result that is not an object reads as empty. (rmcp's [`ErrorData`] is the
//! error type on both sides; see [`super::jsonrpc`].)
//!
//! [`ErrorData`]: super::jsonrpc::ErrorData

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Reads a field as `T`, or as its default when it has another type.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// Reads a list of `T`, keeping the elements that read and the strings of a
/// list of mixed values.
fn lenient_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| serde_json::from_value(i).ok())
            .collect(),
        _ => Vec::new(),
    })
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Reads a result leniently: one that is not an object reads as empty.
pub fn read<T: DeserializeOwned + Default>(result: Value) -> T {
    serde_json::from_value(result).unwrap_or_default()
}

/// Who the server says it is (`serverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct PeerInfo {
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub version: Option<String>,
}

/// The `server/discover` result (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    #[serde(default, deserialize_with = "lenient_list")]
    pub supported_versions: Vec<String>,
    #[serde(default = "empty_object")]
    pub capabilities: Value,
    #[serde(default, deserialize_with = "lenient")]
    pub instructions: Option<String>,
    #[serde(default, rename = "_meta", deserialize_with = "lenient")]
    pub meta: DiscoverMeta,
}

/// The `_meta` of a discover result; the key is
/// [`super::revisions::META_SERVER_INFO`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct DiscoverMeta {
    #[serde(
        default,
        rename = "io.modelcontextprotocol/serverInfo",
        deserialize_with = "lenient"
    )]
    pub server_info: PeerInfo,
}

/// The `data` of an `UnsupportedProtocolVersionError`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UnsupportedVersionData {
    #[serde(default, deserialize_with = "lenient_list")]
    pub supported: Vec<String>,
}

/// The `initialize` result (legacy revisions).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    #[serde(default, deserialize_with = "lenient")]
    pub protocol_version: String,
    #[serde(default, deserialize_with = "lenient")]
    pub server_info: PeerInfo,
    #[serde(default = "empty_object")]
    pub capabilities: Value,
    #[serde(default, deserialize_with = "lenient")]
    pub instructions: Option<String>,
}

/// One page of a `tools/list` result.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools that have a name; others are skipped.
    #[serde(default, deserialize_with = "lenient_list")]
    pub tools: Vec<ListedTool>,
    #[serde(default, deserialize_with = "lenient")]
    pub next_cursor: Option<String>,
}

/// A tool as listed: its name, what a person reads about it, its input
/// schema and its annotations, kept whole for display
/// and for tool pinning.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    #[serde(default, deserialize_with = "lenient")]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub description: Option<String>,
    #[serde(default = "empty_object")]
    pub input_schema: Value,
    #[serde(default = "empty_object")]
    pub annotations: Value,
}

/// The one hint the client acts on.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Hints {
    #[serde(default, deserialize_with = "lenient")]
    read_only_hint: Option<bool>,
}

impl ListedTool {
    /// `readOnlyHint` is exactly `true` (absent, false or not a boolean: may write).
    pub fn read_only(&self) -> bool {
        Hints::deserialize(&self.annotations)
            .map(|h| h.read_only_hint == Some(true))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::wire::revisions::META_SERVER_INFO;
    use serde_json::json;

    #[test]
    fn discover_reads_what_it_can() {
        let r: DiscoverResult = read(json!({
            "supportedVersions": ["2026-07-28", 5, "2025-11-25"],
            "instructions": 7,
            "_meta": {META_SERVER_INFO: {"name": "echo", "version": null}},
        }));
        assert_eq!(r.supported_versions, ["2026-07-28", "2025-11-25"]);
        assert_eq!(r.instructions, None);
        assert_eq!(r.capabilities, json!({}));
        assert_eq!(r.meta.server_info.name.as_deref(), Some("echo"));
        assert_eq!(r.meta.server_info.version, None);
        assert_eq!(
            read::<DiscoverResult>(json!(null)),
            DiscoverResult::default()
        );
    }

    #[test]
    fn initialize_without_server_info_still_reads() {
        let r: InitializeResult =
            read(json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}}));
        assert_eq!(r.protocol_version, "2025-06-18");
        assert_eq!(r.server_info, PeerInfo::default());
        assert_eq!(r.capabilities, json!({"tools": {}}));
    }

    #[test]
    fn tools_without_a_name_are_skipped_and_only_true_is_read_only() {
        let r: ListToolsResult = read(json!({
            "tools": [
                {"name": "a", "annotations": {"readOnlyHint": true, "title": 3}},
                {"annotations": {"readOnlyHint": true}},
                {"name": "b", "annotations": {"readOnlyHint": "true"}},
                {"name": "c"},
                "junk",
            ],
            "nextCursor": "p2",
        }));
        let names: Vec<_> = r
            .tools
            .iter()
            .map(|t| (t.name.as_str(), t.read_only()))
            .collect();
        assert_eq!(names, [("a", true), ("b", false), ("c", false)]);
        assert_eq!(r.tools[2].annotations, json!({}));
        assert_eq!(r.next_cursor.as_deref(), Some("p2"));
    }
}
