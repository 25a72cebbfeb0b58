//! The stdout reader: frames every line the child writes and hands it to
//! [`super::rpc`] to route; a line past the frame ceiling kills the connection.

use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;

use super::closed::Closed;
use super::lifecycle::StreamEnd;
use super::shared::{Command, Shared};
use crate::mcp::wire::framer::{Frame, LineFramer, Oversize};
use crate::sync::lock;

/// Reads stdout to its end, framing and routing every line.
pub(super) async fn read_stdout(shared: Arc<Shared>, mut stdout: ChildStdout) {
    let max_frame = shared.limits.max_frame;
    let mut framer = LineFramer::new(max_frame, Oversize::Fail);
    let mut buf = vec![0u8; 64 * 1024];
    let handle = |frame: Frame<&[u8]>| {
        let Frame::Line(line) = frame else {
            return; // Fail never skips.
        };
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        if let Some(answer) = shared.rpc.route(line, &shared.secrets) {
            shared.send_line(answer);
        }
    };
    let end = loop {
        match stdout.read(&mut buf).await {
            Ok(0) => break StreamEnd::Eof,
            Ok(n) => {
                if framer.push(&buf[..n], &handle).is_err() {
                    let _ = shared.commands.send(Command::Kill(Closed::Protocol {
                        what: format!(
                            "a stdout line passed the {max_frame} byte frame ceiling without a newline"
                        ),
                    }));
                    break StreamEnd::FrameTooLarge;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break StreamEnd::ReadError,
        }
    };
    lock(&shared.ends).stdout = end;
}
