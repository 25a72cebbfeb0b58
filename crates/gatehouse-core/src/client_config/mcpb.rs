//! `gatehouse config mcpb`: a Claude Desktop extension (`.mcpb`, formerly
//! `.dxt`) that runs this Gatehouse binary against one site.
//!
//! Why: Claude Desktop's JSON config cannot reference a secret, but an
//! extension's `user_config` field marked `sensitive: true` is asked for at
//! install and kept in the OS keychain; the manifest's
//! `env: {"GATEHOUSE_API_KEY": "${user_config.api_key}"}` hands it to the
//! server at start. That is the only way this client has to keep a key out of
//! a plain file.
//!
//! The bundle is a zip holding `manifest.json` and `server/gatehouse` (the
//! binary, for the OS it was built on). The manifest follows the MCPB spec
//! (modelcontextprotocol/mcpb `MANIFEST.md` and
//! `schemas/mcpb-manifest-v0.3.schema.json`, commit 27083dcf, 2025-12-03):
//! `manifest_version` "0.3", `server.type: "binary"`, `entry_point`, and
//! `mcp_config` with `${__dirname}` for the unpacked folder. A test validates it
//! against that JSON schema.
//!
//! # Caveats
//! - The site path is this machine's: the bundle is for this machine.
//! - Which manifest versions a given Claude Desktop accepts is not documented;
//!   0.3 is the version MANIFEST.md calls current.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use super::spec::{absolute_utf8, check_server_name};
use super::{API_KEY_ENV, DEFAULT_SERVER_NAME};
use crate::error::{Error, Result, codes};

/// The manifest version written.
pub const MANIFEST_VERSION: &str = "0.3";

/// What to bundle.
#[derive(Debug, Clone)]
pub struct McpbRequest {
    /// The `gatehouse` binary to ship inside the bundle.
    pub binary: PathBuf,
    /// Absolute path of the site the server serves.
    pub site_dir: PathBuf,
    /// The site's name, for the extension's display name.
    pub site_name: String,
    /// The extension's name; [`DEFAULT_SERVER_NAME`] when `None`.
    pub name: Option<String>,
    /// Where to write the `.mcpb` file.
    pub out: PathBuf,
}

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct McpbOutcome {
    pub path: PathBuf,
    pub bytes: u64,
    pub manifest: Value,
    pub instructions: String,
}

/// The file name of the binary inside the bundle on this OS.
fn entry_point() -> &'static str {
    if cfg!(windows) {
        "server/gatehouse.exe"
    } else {
        "server/gatehouse"
    }
}

fn platform() -> &'static str {
    if cfg!(target_os = "macos") {
        "darwin"
    } else if cfg!(windows) {
        "win32"
    } else {
        "linux"
    }
}

/// The `manifest.json` for `req`.
pub fn manifest(req: &McpbRequest) -> Result<Value> {
    let name = req.name.as_deref().unwrap_or(DEFAULT_SERVER_NAME);
    check_server_name(name)?;
    let site = absolute_utf8(&req.site_dir, "site folder")?;
    Ok(json!({
        "manifest_version": MANIFEST_VERSION,
        "name": name,
        "display_name": format!("Gatehouse: {}", req.site_name),
        "version": crate::version(),
        "description": format!(
            "Safe, scoped access to the Gatehouse site \"{}\" over MCP.", req.site_name
        ),
        "long_description": "Runs `gatehouse mcp` for one site as the API key you enter at \
            install; Claude Desktop keeps the key in the operating system's keychain.",
        "author": { "name": "Gatehouse" },
        "server": {
            "type": "binary",
            "entry_point": entry_point(),
            "mcp_config": {
                "command": format!("${{__dirname}}/{}", entry_point()),
                "args": ["mcp", "--site", site],
                "env": { API_KEY_ENV: "${user_config.api_key}" }
            }
        },
        "compatibility": { "platforms": [platform()] },
        "user_config": {
            "api_key": {
                "type": "string",
                "title": "Gatehouse API key",
                "description": "A key minted with `gatehouse keys mint` (starts with gatehouse_sk_). \
                    Stored in the OS keychain.",
                "sensitive": true,
                "required": true
            }
        }
    }))
}

/// Writes the bundle: `manifest.json` plus the binary, mode 0755.
pub fn write_bundle(req: &McpbRequest) -> Result<McpbOutcome> {
    let manifest = manifest(req)?;
    let binary = std::fs::read(&req.binary).map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot read {}: {e}", req.binary.display()),
        )
    })?;
    let io = |e: &dyn std::fmt::Display| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot write {}: {e}", req.out.display()),
        )
    };
    let tmp = req.out.with_extension("mcpb.partial");
    // A leftover is this tool's own (a run cut short): removed, never
    // followed, so a link planted at the name truncates nothing.
    let _ = std::fs::remove_file(&tmp);
    let result = (|| -> Result<()> {
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io(&e))?;
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("manifest.json", options.unix_permissions(0o644))
            .map_err(|e| io(&e))?;
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| io(&e))?;
        zip.write_all(text.as_bytes()).map_err(|e| io(&e))?;
        zip.start_file(entry_point(), options.unix_permissions(0o755))
            .map_err(|e| io(&e))?;
        zip.write_all(&binary).map_err(|e| io(&e))?;
        zip.finish()
            .map_err(|e| io(&e))?
            .sync_all()
            .map_err(|e| io(&e))?;
        std::fs::rename(&tmp, &req.out).map_err(|e| io(&e))
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let bytes = std::fs::metadata(&req.out).map(|m| m.len()).unwrap_or(0);
    Ok(McpbOutcome {
        path: req.out.clone(),
        bytes,
        manifest,
        instructions: format!(
            "Open the file with Claude Desktop (or drag it onto Settings → Extensions), click \
             Install, and paste an API key when asked: Claude Desktop keeps it in the OS \
             keychain and passes it to the server as {API_KEY_ENV}. Remove any \"gatehouse\" \
             entry from claude_desktop_config.json so the key is not also there in clear."
        ),
    })
}

/// The default output file for a site: `gatehouse-<site name>.mcpb` in `dir`.
pub fn default_out(dir: &Path, site_name: &str) -> PathBuf {
    let safe: String = site_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    dir.join(format!("gatehouse-{safe}.mcpb"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(out: PathBuf) -> McpbRequest {
        McpbRequest {
            binary: std::env::current_exe().unwrap(),
            site_dir: PathBuf::from("/srv/sites/blog"),
            site_name: "blog".into(),
            name: None,
            out,
        }
    }

    /// The schema is the spec's own file (see tests/fixtures/mcpb/SOURCE.md).
    #[test]
    fn mcpb_manifest_matches_the_spec_schema() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mcpb/mcpb-manifest-v0.3.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let manifest = manifest(&request(PathBuf::from("/tmp/x.mcpb"))).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&manifest)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(manifest["server"]["type"], "binary");
        assert_eq!(manifest["user_config"]["api_key"]["sensitive"], true);
        assert_eq!(
            manifest["server"]["mcp_config"]["env"],
            json!({"GATEHOUSE_API_KEY": "${user_config.api_key}"})
        );
        // The schema really checks: a manifest without its author fails.
        let mut broken = manifest.clone();
        broken.as_object_mut().unwrap().remove("author");
        assert!(!validator.is_valid(&broken));
        broken = manifest.clone();
        broken["server"]["type"] = json!("docker");
        assert!(!validator.is_valid(&broken));
    }
}
