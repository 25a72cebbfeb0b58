//! The byte ring buffer that keeps a tail's newest bytes.

/// A byte ring buffer whose capacity only grows, exactly (the budget counts
/// bytes, so the buffer must not double past it), and whose writes are memcpys
/// (a flood passes through it at pipe speed).
#[derive(Debug, Default)]
pub(super) struct ByteRing {
    buf: Vec<u8>,
    /// Index of the oldest byte.
    start: usize,
    len: usize,
}

impl ByteRing {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn to_vec(&self) -> Vec<u8> {
        let cap = self.buf.len();
        if cap == 0 {
            return Vec::new();
        }
        let first = (cap - self.start).min(self.len);
        let mut out = Vec::with_capacity(self.len);
        out.extend_from_slice(&self.buf[self.start..self.start + first]);
        out.extend_from_slice(&self.buf[..self.len - first]);
        out
    }

    /// Appends `chunk`, evicting the oldest bytes beyond `cap`.
    pub(super) fn push_evicting(&mut self, chunk: &[u8], cap: usize) {
        if cap > self.buf.len() {
            // Grow: lay the contents out from 0 in a buffer of exactly `cap`.
            let mut grown = self.to_vec();
            grown.resize(cap, 0);
            self.buf = grown;
            self.start = 0;
        }
        let cap = self.buf.len();
        if cap == 0 {
            return;
        }
        if chunk.len() >= cap {
            self.buf.copy_from_slice(&chunk[chunk.len() - cap..]);
            self.start = 0;
            self.len = cap;
            return;
        }
        let mut end = (self.start + self.len) % cap;
        let first = (cap - end).min(chunk.len());
        self.buf[end..end + first].copy_from_slice(&chunk[..first]);
        self.buf[..chunk.len() - first].copy_from_slice(&chunk[first..]);
        end = (end + chunk.len()) % cap;
        let total = self.len + chunk.len();
        if total > cap {
            self.len = cap;
            self.start = end;
        } else {
            self.len = total;
        }
    }
}
