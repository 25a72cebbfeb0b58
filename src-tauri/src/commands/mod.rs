//! Tauri commands, one file per screen. Each command is an adapter: extract
//! the inputs, call one core function, convert the error.

pub mod actor_preview;
pub mod app;
pub mod approvals;
pub mod audit;
pub mod client_config;
pub mod connection_calls;
pub mod connection_edit;
pub mod connections;
pub mod grants;
pub mod keys;
pub mod serve;
pub mod site;
pub mod site_config;
pub mod users;
