//! gatehouse-core's end-to-end tests: real child processes, real SQLite and
//! PostgreSQL (when `GATEHOUSE_TEST_PG_URL` is set), real SDK servers. One
//! binary, one module per area; [`common`] is the shared harness (PostgreSQL's is
//! the `gatehouse-test-pg` crate, shared with the CLI's tests).

mod admin;
mod client;
mod client_interop;
mod client_store;
mod common;
mod fuzz_replay;
// Landlock, seccomp, the read-only view, bwrap: the Linux backend only.
#[cfg(target_os = "linux")]
mod isolation;
mod key_report;
mod key_scope;
mod oauth;
mod pg_dropped_connection;
mod sandbox;
mod stderr;
mod store;
mod windows;
