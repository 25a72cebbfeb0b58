//! What a server says about itself and its tools, as this client keeps it.

use serde::Serialize;
use serde_json::Value;

use super::lifecycle::EffectClass;
use crate::mcp::wire::revisions::Era;

/// What the server said about itself.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub era: Era,
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub capabilities: Value,
    pub instructions: Option<String>,
}

/// A tool as listed, with the effect class its hint implies.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The JSON Schema of its arguments as the server sent it (an object).
    pub input_schema: Value,
    pub annotations: Value,
    pub effect: EffectClass,
}
