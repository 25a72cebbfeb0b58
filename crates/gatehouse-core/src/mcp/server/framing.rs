//! Newline-delimited framing of stdin, on a thread of its own.
//!
//! A plain thread (not tokio's stdin, whose blocking read cannot be cancelled
//! and would hold the runtime open at shutdown) reads lines into a bounded
//! buffer: a line longer than the limit is discarded as it streams past and
//! reported as [`Frame::Oversized`], so a huge message costs no memory and the
//! server can answer it with an error and keep serving. The channel is bounded
//! too, so a client that floods stdin is slowed down rather than buffered.

use std::io::{BufRead, BufReader, Read};

use tokio::sync::mpsc;

/// One unit read from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its `\n` (and `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit was dropped; `bytes` is how long it was.
    Oversized { bytes: usize },
}

/// Starts the reader thread. The receiver yields `None` at end of input.
pub fn spawn_reader<R: Read + Send + 'static>(input: R, max_line: usize) -> mpsc::Receiver<Frame> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::Builder::new()
        .name("gatehouse-stdin".into())
        .spawn(move || read_frames(input, max_line, &tx))
        .expect("the stdin thread starts");
    rx
}

fn read_frames<R: Read>(input: R, max_line: usize, tx: &mpsc::Sender<Frame>) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    let mut seen = 0usize; // bytes of the current line, kept or not
    loop {
        let buf = match reader.fill_buf() {
            Ok([]) => break,
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed; treating it as closed");
                break;
            }
        };
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        seen += chunk.len();
        if seen <= max_line {
            line.extend_from_slice(chunk);
        } else if !line.is_empty() {
            line = Vec::new(); // free the partial line at once
        }
        let used = chunk.len() + usize::from(done);
        reader.consume(used);
        if done && !emit(tx, &mut line, &mut seen, max_line) {
            return;
        }
    }
    // A last line without a newline still counts.
    if seen > 0 {
        emit(tx, &mut line, &mut seen, max_line);
    }
}

/// Sends the finished line; false when the server has stopped listening.
fn emit(tx: &mpsc::Sender<Frame>, line: &mut Vec<u8>, seen: &mut usize, max_line: usize) -> bool {
    let frame = if *seen > max_line {
        Frame::Oversized { bytes: *seen }
    } else {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Frame::Line(std::mem::take(line))
    };
    *seen = 0;
    line.clear();
    tx.blocking_send(frame).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &'static [u8], max: usize) -> Vec<Frame> {
        let mut rx = spawn_reader(input, max);
        let mut out = Vec::new();
        while let Some(f) = rx.blocking_recv() {
            out.push(f);
        }
        out
    }

    #[test]
    fn lines_are_split_and_trimmed() {
        assert_eq!(
            frames(b"a\r\nbc\n\nlast", 10),
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bc".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }

    #[test]
    fn oversized_lines_are_reported_not_kept() {
        assert_eq!(
            frames(b"0123456789ABC\nok\n", 10),
            vec![Frame::Oversized { bytes: 13 }, Frame::Line(b"ok".to_vec())]
        );
    }
}
