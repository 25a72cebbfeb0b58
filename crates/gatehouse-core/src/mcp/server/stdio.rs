//! stdin and stdout of `gatehouse mcp`, read and written on the runtime's own
//! thread when they are pipes or sockets (what every MCP client gives a server).
//!
//! Why: a call used to cross four threads (a stdin thread, the runtime, the
//! blocking pool that `tokio::io::stdout()` writes through, and back), and on
//! this kind of machine each wake-up of an idle thread costs more than the
//! call's own work (docs/decisions.md, "Server hot path"). Non-blocking
//! descriptors polled by the runtime need none of those hand-offs, and a
//! pending read can be dropped at shutdown. A terminal or a file keeps the
//! blocking way: `O_NONBLOCK` belongs to the open file, and a terminal's is
//! shared with the shell that started us.

#[cfg(unix)]
use std::fs::File;
use std::io::Write;
#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
#[cfg(unix)]
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
#[cfg(unix)]
use tokio::io::{AsyncRead, AsyncReadExt};
#[cfg(unix)]
use tokio::net::UnixStream;
#[cfg(unix)]
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use crate::mcp::wire::framer::{self, Frame};
#[cfg(unix)]
use crate::mcp::wire::framer::{LineFramer, Oversize};

/// What a standard stream of ours is.
#[cfg(unix)]
enum Kind {
    Fifo(OwnedFd),
    Socket(OwnedFd),
    /// A terminal or a file (see the module doc).
    Other,
}

#[cfg(unix)]
fn kind(fd: impl AsFd) -> Kind {
    let Ok(own) = fd.as_fd().try_clone_to_owned() else {
        return Kind::Other;
    };
    let file = File::from(own);
    match file.metadata() {
        Ok(m) if m.file_type().is_fifo() => Kind::Fifo(file.into()),
        Ok(m) if m.file_type().is_socket() => Kind::Socket(file.into()),
        _ => Kind::Other,
    }
}

/// A socket end switched to non-blocking mode, polled by the runtime.
#[cfg(unix)]
fn socket(fd: OwnedFd) -> Option<UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true).ok()?;
    UnixStream::from_std(std).ok()
}

/// Lines from stdin, framed as [`framer::spawn_reader`] frames them.
pub(crate) fn input(max_line: usize) -> mpsc::Receiver<Frame<Vec<u8>>> {
    #[cfg(unix)]
    return input_polled(max_line);
    // Windows: the blocking reader thread (no runtime-polled pipes here).
    #[cfg(not(unix))]
    return framer::spawn_reader(std::io::stdin(), max_line);
}

/// Stdin polled by the runtime when it is a pipe or a socket.
#[cfg(unix)]
fn input_polled(max_line: usize) -> mpsc::Receiver<Frame<Vec<u8>>> {
    let stdin: Pin<Box<dyn AsyncRead + Send>> = match kind(std::io::stdin()) {
        Kind::Fifo(fd) => match pipe::Receiver::from_owned_fd(fd) {
            Ok(r) => Box::pin(r),
            Err(_) => return framer::spawn_reader(std::io::stdin(), max_line),
        },
        Kind::Socket(fd) => match socket(fd) {
            Some(s) => Box::pin(s),
            None => return framer::spawn_reader(std::io::stdin(), max_line),
        },
        Kind::Other => return framer::spawn_reader(std::io::stdin(), max_line),
    };
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut stdin = stdin;
        let mut framer = LineFramer::new(max_line, Oversize::Skip);
        let mut buf = vec![0u8; 64 * 1024];
        let mut frames = Vec::new();
        loop {
            let n = match stdin.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(error = %e, "reading stdin failed; treating it as closed");
                    break;
                }
            };
            // Skip never fails.
            let _ = framer.push(&buf[..n], |f| frames.push(f.to_vec()));
            for frame in frames.drain(..) {
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
        }
        let _ = framer.finish(|f| frames.push(f.to_vec()));
        for frame in frames {
            let _ = tx.send(frame).await;
        }
    });
    rx
}

/// stdout for the server's one writer task.
pub(crate) fn output() -> Pin<Box<dyn AsyncWrite + Send>> {
    let fallback = || -> Pin<Box<dyn AsyncWrite + Send>> { Box::pin(InPlace(std::io::stdout())) };
    #[cfg(unix)]
    return match kind(std::io::stdout()) {
        Kind::Fifo(fd) => {
            pipe::Sender::from_owned_fd(fd).map_or_else(|_| fallback(), |s| Box::pin(s))
        }
        Kind::Socket(fd) => socket(fd).map_or_else(fallback, |s| Box::pin(s)),
        Kind::Other => fallback(),
    };
    #[cfg(not(unix))]
    fallback()
}

/// A terminal or a file, written in place: such writes do not wait on a
/// reader, unlike a full pipe's.
struct InPlace(std::io::Stdout);

impl AsyncWrite for InPlace {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(self.get_mut().0.write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(self.get_mut().0.flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}
