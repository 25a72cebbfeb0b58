//! Setting a connection up: the protocol revision and the tool list.
//!
//! Modern (2026-07-28): no handshake; every request carries
//! `_meta.io.modelcontextprotocol/protocolVersion` and `clientCapabilities`;
//! `server/discover` is the stdio probe. Legacy (2025-11-25 back to
//! 2024-11-05): `initialize`, then `notifications/initialized`.

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::connection::Connection;
use super::lifecycle::EffectClass;
use super::rpc::Reply;
use super::server_info::{ServerInfo, ToolInfo};
use crate::error::{Error, Result, codes};
use crate::mcp::wire::jsonrpc::{ErrorCode, is_modern_error};
use crate::mcp::wire::results::{
    self, DiscoverResult, InitializeResult, ListToolsResult, UnsupportedVersionData,
};
use crate::mcp::wire::revisions::{
    Era, LEGACY, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, MODERN,
};
use crate::sync::lock;

pub(super) fn client_info() -> Value {
    json!({"name": "gatehouse", "version": env!("CARGO_PKG_VERSION")})
}

/// The `_meta` every modern request carries (built once).
pub(super) fn modern_meta() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(|| {
        json!({
            META_PROTOCOL_VERSION: MODERN,
            META_CLIENT_CAPABILITIES: {},
            META_CLIENT_INFO: client_info(),
        })
    })
}

fn unsupported(versions: &[String]) -> Error {
    Error::new(
        codes::PROTOCOL_UNSUPPORTED,
        format!(
            "the server supports none of the protocol revisions this client speaks (it lists: {})",
            if versions.is_empty() {
                "nothing".to_string()
            } else {
                versions.join(", ")
            }
        ),
    )
    .hint(format!(
        "this client speaks {MODERN} and {}",
        LEGACY.join(", ")
    ))
}

impl Connection {
    pub(super) async fn setup(&self) -> Result<()> {
        let info = self.negotiate().await?;
        tracing::debug!(era = info.era.as_str(), version = %info.protocol_version, "negotiated");
        let _ = self.shared.server.set(info);
        self.list_tools().await?;
        Ok(())
    }

    /// The stdio backward-compatibility rules of 2026-07-28: probe with
    /// `server/discover`; a result or a recognised modern error means modern;
    /// any other error, or silence past the probe timeout, means legacy.
    async fn negotiate(&self) -> Result<ServerInfo> {
        match self.discover(self.shared.limits.probe_timeout).await? {
            Probe::Modern(info) => Ok(info),
            Probe::Legacy(version) => self.initialize(version).await,
        }
    }

    /// Sends `server/discover` and reads the answer (see [`Self::negotiate`]).
    async fn discover(&self, timeout: std::time::Duration) -> Result<Probe> {
        let probe = self
            .shared
            .rpc
            .request("server/discover", json!({"_meta": modern_meta()}), timeout)
            .await;
        Ok(match probe {
            Some(Reply::Answer(Ok(result))) => {
                let result: DiscoverResult = results::read(result);
                if !result.supported_versions.iter().any(|v| v == MODERN) {
                    return Err(unsupported(&result.supported_versions));
                }
                let server = result.meta.server_info;
                Probe::Modern(ServerInfo {
                    era: Era::Modern,
                    protocol_version: MODERN.to_string(),
                    name: server.name,
                    version: server.version,
                    capabilities: result.capabilities,
                    instructions: result.instructions,
                })
            }
            Some(Reply::Answer(Err(e))) if is_modern_error(e.code) => {
                // Modern, but not our version: use a legacy one it lists, if any.
                let supported = e
                    .data
                    .map(results::read::<UnsupportedVersionData>)
                    .unwrap_or_default()
                    .supported;
                match LEGACY.iter().find(|v| supported.iter().any(|s| s == *v)) {
                    Some(v) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                        Probe::Legacy(v)
                    }
                    _ => return Err(unsupported(&supported)),
                }
            }
            Some(Reply::Answer(Err(_))) | None => Probe::Legacy(LEGACY[0]),
            Some(Reply::Closed(c)) => return Err(c.error()),
        })
    }

    /// The legacy `initialize` handshake at `legacy_version`.
    ///
    /// A modern server slower to start than the probe timeout (an SDK
    /// importing its dependencies on a loaded machine) answers the probe
    /// late and then refuses `initialize` with a modern error: then it is
    /// probed once more, with the setup deadline, instead of given up on.
    async fn initialize(&self, legacy_version: &str) -> Result<ServerInfo> {
        let s = &self.shared;
        let reply = s
            .rpc
            .request(
                "initialize",
                json!({
                    "protocolVersion": legacy_version,
                    "capabilities": {},
                    "clientInfo": client_info(),
                }),
                s.limits.setup_timeout,
            )
            .await;
        let result: InitializeResult = match reply {
            Some(Reply::Answer(Ok(r))) => results::read(r),
            Some(Reply::Answer(Err(e))) => {
                if is_modern_error(e.code)
                    && let Probe::Modern(info) = self.discover(s.limits.setup_timeout).await?
                {
                    return Ok(info);
                }
                return Err(Error::new(
                    codes::PROTOCOL_UNSUPPORTED,
                    format!(
                        "the server refused both server/discover and initialize: {}",
                        e.message
                    ),
                )
                .detail(json!({"code": e.code, "data": e.data})));
            }
            Some(Reply::Closed(c)) => return Err(c.error()),
            None => {
                return Err(Error::new(
                    codes::PROTOCOL_UNSUPPORTED,
                    "the server answered neither server/discover nor initialize",
                )
                .hint("check that the command starts an MCP server speaking stdio"));
            }
        };
        if !LEGACY.contains(&result.protocol_version.as_str()) {
            return Err(unsupported(&[result.protocol_version]));
        }
        // Awaited, so it reaches the server before any later request.
        s.rpc
            .write_line(&crate::mcp::wire::jsonrpc::notification_line(
                "notifications/initialized",
                &json!({}),
            ))
            .await;
        Ok(ServerInfo {
            era: Era::Legacy,
            protocol_version: result.protocol_version,
            name: result.server_info.name,
            version: result.server_info.version,
            capabilities: result.capabilities,
            instructions: result.instructions,
        })
    }

    /// Lists the tools (following pagination) and refreshes the effect classes
    /// used for calls dispatched from now on. A list past [`MAX_TOOLS`] tools
    /// or [`MAX_LIST_BYTES`] is refused: it is held in this process, pinned
    /// and audited, so an endless one would take the host's memory and the
    /// audit log with it (the child's own limits do not cover either).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>> {
        let s = &self.shared;
        let mut tools = Vec::new();
        let mut bytes = 0;
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut params = match s.era() {
                Some(Era::Modern) => json!({"_meta": modern_meta()}),
                _ => json!({}),
            };
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let page: ListToolsResult = match s
                .rpc
                .request("tools/list", params, s.limits.setup_timeout)
                .await
            {
                Some(Reply::Answer(Ok(r))) => {
                    // Counted before the page is read into tools.
                    let listed = r.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
                    bytes += serde_json::to_vec(&r).map_or(0, |b| b.len());
                    if tools.len() + listed > MAX_TOOLS || bytes > MAX_LIST_BYTES {
                        return Err(too_many_tools());
                    }
                    results::read(r)
                }
                Some(Reply::Answer(Err(e))) => {
                    return Err(Error::new(
                        codes::REMOTE_ERROR,
                        format!("tools/list failed: {}", e.message),
                    )
                    .detail(json!({"code": e.code, "data": e.data})));
                }
                Some(Reply::Closed(c)) => return Err(c.error()),
                None => {
                    return Err(Error::new(
                        codes::CALL_TIMEOUT,
                        "tools/list was not answered in time",
                    ));
                }
            };
            for t in page.tools {
                // A name is what a model and a person call the tool by: one
                // that a control or bidirectional character makes read as
                // another is refused, not shown.
                if let Some(c) = t.name.chars().find(|&c| hides_in_a_name(c)) {
                    return Err(Error::new(
                        codes::PROTOCOL_VIOLATION,
                        format!(
                            "the server lists a tool named {} with an invisible, control or bidirectional character (U+{:04X})",
                            crate::text::escape_controls(&t.name),
                            c as u32
                        ),
                    )
                    .hint("MCP tool names are letters, digits, '_', '-' and '.': check that the command starts the server you meant"));
                }
                let effect = if t.read_only() {
                    EffectClass::ReadOnly
                } else {
                    EffectClass::MayWrite
                };
                tools.push(ToolInfo {
                    name: t.name,
                    title: t.title,
                    description: t.description,
                    input_schema: t.input_schema,
                    annotations: t.annotations,
                    effect,
                });
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        *lock(&s.tools) = tools.iter().map(|t| (t.name.clone(), t.effect)).collect();
        *lock(&s.listed) = tools.clone();
        Ok(tools)
    }
}

/// Whether `c` makes a tool name read as another: a control, a
/// bidirectional control, or an invisible format character (zero-width
/// spaces and joiners, word joiner, soft hyphen, byte-order mark).
fn hides_in_a_name(c: char) -> bool {
    c.is_control()
        || crate::text::is_bidi_control(c)
        || matches!(c, '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
}

/// The most tools a server may list (MCP servers offer tens).
pub const MAX_TOOLS: usize = 1000;
/// The most bytes a server's tool list may take, all pages together.
pub const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

fn too_many_tools() -> Error {
    Error::new(
        codes::PROTOCOL_VIOLATION,
        format!(
            "the server lists more than {MAX_TOOLS} tools or {} MiB of them",
            MAX_LIST_BYTES >> 20
        ),
    )
    .hint("no MCP server needs that many: check that the command starts the server you meant")
}

/// What a `server/discover` probe found.
enum Probe {
    Modern(ServerInfo),
    /// Legacy, at this revision.
    Legacy(&'static str),
}

#[cfg(test)]
mod tests {
    use super::hides_in_a_name;

    /// Names that read as another are caught whatever hides in them: a
    /// bidirectional override, and the invisible format characters a
    /// first version let through (`read_\u{200b}notes` reads "read_notes").
    #[test]
    fn names_with_hidden_characters_are_caught_and_plain_ones_are_not() {
        for name in [
            "read_\u{202e}seton",
            "read_\u{200b}notes",
            "echo\u{feff}",
            "a\u{2060}b",
            "x\u{7}",
        ] {
            assert!(name.chars().any(hides_in_a_name), "{name:?}");
        }
        for name in ["read_notes", "files.read-v2", "Überschrift", "検索"] {
            assert!(!name.chars().any(hides_in_a_name), "{name:?}");
        }
    }
}
