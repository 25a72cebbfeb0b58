//! Why a connection ended ([`Closed`]): every pending call fails with it, and
//! the record stores its [`EndReason`].

use std::time::Duration;

use serde_json::json;

use crate::error::{Error, codes};
use crate::sandbox::ExitInfo;

/// Why a connection ended, as its record stores it and the desktop shows it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::EnumIter,
    strum::IntoStaticStr,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum EndReason {
    /// A call passed its deadline; the group was killed.
    Timeout,
    /// The memory ceiling ([`Ceiling::MaxRss`]).
    Memory,
    /// The CPU ceiling ([`Ceiling::MaxCpu`]).
    Cpu,
    /// The scratch quota ([`Ceiling::ScratchQuota`]).
    ScratchQuota,
    /// The server ended by itself with status 0.
    EndOfInput,
    /// Any other exit status, or a signal.
    Crash,
    /// The server broke the protocol.
    Protocol,
    /// Closed by us.
    Closed,
    /// Dropped without a close.
    Dropped,
    /// The process that ran it was killed; the next start settled the run.
    HostKilled,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A resource ceiling of a connection's process group.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::IntoStaticStr,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Ceiling {
    MaxRss,
    MaxCpu,
    ScratchQuota,
}

/// Why the connection ended.
#[derive(Debug, Clone)]
pub(super) enum Closed {
    Timeout {
        tool: String,
        after: Duration,
    },
    Exited {
        exit: Option<ExitInfo>,
        excerpt: String,
    },
    Resource {
        ceiling: Ceiling,
        limit: String,
        observed: String,
    },
    Protocol {
        what: String,
    },
    Shutdown,
    Dropped,
}

impl Closed {
    /// What the record stores (and the desktop shows).
    pub(super) fn reason(&self) -> EndReason {
        match self {
            Closed::Timeout { .. } => EndReason::Timeout,
            Closed::Exited { exit, .. } => match exit {
                Some(ExitInfo {
                    code: Some(0),
                    signal: None,
                }) => EndReason::EndOfInput,
                _ => EndReason::Crash,
            },
            Closed::Resource { ceiling, .. } => match ceiling {
                Ceiling::MaxRss => EndReason::Memory,
                Ceiling::MaxCpu => EndReason::Cpu,
                Ceiling::ScratchQuota => EndReason::ScratchQuota,
            },
            Closed::Protocol { .. } => EndReason::Protocol,
            Closed::Shutdown => EndReason::Closed,
            Closed::Dropped => EndReason::Dropped,
        }
    }

    pub(super) fn error(&self) -> Error {
        match self {
            Closed::Timeout { tool, after } => Error::new(
                codes::CALL_TIMEOUT,
                format!(
                    "a call to {tool} passed its {} deadline; the server's process group was killed",
                    humantime::format_duration(*after)
                ),
            )
            .hint("raise the connection's --timeout if the tool is legitimately slow"),
            Closed::Exited { exit, excerpt } => Error::new(
                codes::SERVER_EXITED,
                format!("the server exited ({})", describe_exit(exit.as_ref())),
            )
            .hint("see the stderr excerpt in the detail")
            .detail(json!({"exit": exit, "stderr": excerpt})),
            Closed::Resource {
                ceiling,
                limit,
                observed,
            } => Error::new(
                codes::RESOURCE_LIMIT,
                format!("the server's process group passed its {ceiling} ceiling ({observed} > {limit}) and was killed"),
            )
            .hint(format!("raise the connection's {ceiling} limit if this use is expected"))
            .detail(json!({"ceiling": ceiling, "limit": limit, "observed": observed})),
            Closed::Protocol { what } => {
                Error::new(codes::PROTOCOL_VIOLATION, format!("the server broke the protocol: {what}"))
                    .hint("the server wrote something other than MCP messages on stdout")
            }
            Closed::Shutdown => Error::new(codes::CONNECTION_CLOSED, "the connection was closed"),
            Closed::Dropped => Error::new(codes::CONNECTION_CLOSED, "the connection was dropped"),
        }
    }
}

fn describe_exit(exit: Option<&ExitInfo>) -> String {
    match exit {
        Some(ExitInfo { code: Some(c), .. }) => format!("exit code {c}"),
        Some(ExitInfo {
            signal: Some(s), ..
        }) => format!("killed by signal {s}"),
        _ => "exit status not observed".to_string(),
    }
}
