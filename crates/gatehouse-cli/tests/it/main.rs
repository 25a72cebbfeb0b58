//! The `gatehouse` binary end to end: one test binary, one module per
//! command area; [`util`] (an isolated site), [`mcp_util`] (raw MCP lines)
//! and [`sdk`] (the official SDK clients' scripts) are the shared harness.

mod actors;
mod approvals;
mod audit;
mod audit_anchor;
mod audit_fail_closed;
mod client_interop;
mod concurrency;
mod config;
mod config_doctor;
mod config_install;
mod config_mcpb;
mod config_remote;
mod connections;
mod crash;
mod database_errors;
mod desk_connections;
mod fetch_guard;
mod import_tamper;
mod json_flag;
mod key_networks;
mod key_restrictions;
mod keys;
mod mcp_actors;
mod mcp_http_fetch;
mod mcp_interop;
// Signals and process groups: Unix only.
#[cfg(unix)]
mod mcp_lifecycle;
mod mcp_load;
mod mcp_protocol;
mod mcp_serve;
#[cfg(unix)]
mod mcp_stdio;
mod mcp_util;
// The Linux backend's reaper and sandbox, driven through the CLI.
#[cfg(target_os = "linux")]
mod orphans;
// The packaged service's environment, run on Linux (what the unit targets).
#[cfg(target_os = "linux")]
mod packaging_serve;
mod permissions_doc;
mod policy_content;
mod portable;
mod robustness;
#[cfg(target_os = "linux")]
mod sandbox_cli;
mod sdk;
// A Secret Service of the test's own (gnome-keyring on a private D-Bus).
#[cfg(target_os = "linux")]
mod secret_service;
mod serve_interop;
mod serve_oauth;
mod serve_resilience;
mod serve_table;
mod serve_util;
mod site_config;
mod storage_failures;
mod supervise;
mod tool_pinning;
mod util;
mod version;
