//! Commands for the Connections screen.
//!
//! Live output reaches the page through a `tauri::ipc::Channel`, which keeps
//! messages in order (events do not promise that). [`TailEvent`] is the
//! message shape the screen's stderr-tail panel renders; today only
//! [`stream_demo`] produces it, later a connection's bounded stderr tail will.

use std::time::Duration;

use gatehouse_core::Error;
use gatehouse_core::error::codes;
use serde::Serialize;
use tauri::ipc::Channel;

use crate::error::IpcResult;

/// One message on a tail stream.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TailEvent {
    /// A line of text; `seq` counts from 1 so the page can spot a gap.
    Line { seq: u32, text: String },
    /// The stream is over; no message follows.
    End { lines: u32 },
}

/// Most lines one demo stream may send: the page is not a log store.
const MAX_DEMO_LINES: u32 = 1000;

/// Streams `count` numbered lines, then `End`, and returns how many were sent.
///
/// Proves the Rust-to-page stream the stderr tail will use.
#[tauri::command]
pub async fn stream_demo(count: u32, on_event: Channel<TailEvent>) -> IpcResult<u32> {
    if count == 0 || count > MAX_DEMO_LINES {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("cannot stream {count} lines"),
            format!("ask for 1 to {MAX_DEMO_LINES} lines"),
        )
        .into());
    }
    for seq in 1..=count {
        let line = TailEvent::Line {
            seq,
            text: format!("demo line {seq} of {count}"),
        };
        if on_event.send(line).is_err() {
            // The page went away (reload or window closed): nobody to tell.
            return Ok(seq - 1);
        }
        // Spread the lines out a little so the panel visibly fills live.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = on_event.send(TailEvent::End { lines: count });
    Ok(count)
}
