//! A request body that remembers whether it was read to its end.
//!
//! Why: a refusal is often answered before the body is read (a 401 needs only
//! the headers). hyper then drains what already arrived and, when the rest is
//! still on its way, closes the connection after the answer, which had not
//! said so: a client that reused the connection (every OAuth SDK's discovery
//! request follows its first 401) found it closed ("server disconnected").
//! An answer sent before the body's end now carries `Connection: close`, so
//! no client reuses a connection the server is about to close.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};

/// [`Incoming`], noting in a shared flag when its end was reached.
pub struct RequestBody {
    inner: Incoming,
    ended: Arc<AtomicBool>,
}

impl RequestBody {
    /// The body, and the flag that tells whether it was read to its end (set
    /// at once for a body with nothing in it).
    pub fn new(inner: Incoming) -> (RequestBody, Arc<AtomicBool>) {
        let ended = Arc::new(AtomicBool::new(inner.is_end_stream()));
        let body = RequestBody {
            inner,
            ended: ended.clone(),
        };
        (body, ended)
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.ended.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether an answer must close the connection: its request's body was not
/// read to the end.
pub fn unread(ended: &AtomicBool) -> bool {
    !ended.load(Ordering::Relaxed)
}
