//! Why a connection ended ([`Closed`]): every pending call fails with it, and
//! the record stores its [`Closed::reason`].

use std::time::Duration;

use serde_json::json;

use crate::error::{Error, codes};
use crate::sandbox::ExitInfo;

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
        ceiling: String,
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
    /// The word the record stores (and the desktop shows): `timeout`,
    /// `memory`, `cpu` or `scratch_quota` (a ceiling), `end_of_input` (the
    /// server ended by itself with status 0), `crash` (any other status or a
    /// signal), `protocol`, `closed` (by us), `dropped`.
    pub(super) fn reason(&self) -> &'static str {
        match self {
            Closed::Timeout { .. } => "timeout",
            Closed::Exited { exit, .. } => match exit {
                Some(ExitInfo {
                    code: Some(0),
                    signal: None,
                }) => "end_of_input",
                _ => "crash",
            },
            Closed::Resource { ceiling, .. } => match ceiling.as_str() {
                "max_rss" => "memory",
                "max_cpu" => "cpu",
                _ => "scratch_quota",
            },
            Closed::Protocol { .. } => "protocol",
            Closed::Shutdown => "closed",
            Closed::Dropped => "dropped",
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
