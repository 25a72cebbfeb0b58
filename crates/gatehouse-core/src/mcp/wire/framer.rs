//! Newline-delimited framing, the one line framer both sides use.
//!
//! Rules, the same in both directions:
//! - a line ends at `\n`; a trailing `\r` is stripped before the line is
//!   handed on (the ceiling counts it: it is a byte the peer sent);
//! - the framer never holds more than `max_frame` bytes of an unfinished line;
//! - a line longer than `max_frame` gets the [`Oversize`] policy the owner
//!   chose: [`Oversize::Skip`] drops it as it streams past and reports
//!   [`Frame::Oversized`] (the server answers it with an error and keeps
//!   serving), [`Oversize::Fail`] stops the stream for good with
//!   [`FrameTooLarge`] (the client: a child that writes an endless line has no
//!   trustworthy boundary left);
//! - an unfinished last line counts only if the owner calls [`LineFramer::finish`].
//!
//! [`spawn_reader`] runs a framer over a blocking reader on a thread of its
//! own (the server's stdin: tokio's stdin cannot be cancelled and would hold
//! the runtime open at shutdown); the channel is bounded, so a peer that
//! floods is slowed down rather than buffered.

use std::io::Read;

use tokio::sync::mpsc;

/// What to do with a line longer than the ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oversize {
    /// Drop it as it streams past, report [`Frame::Oversized`], keep going.
    Skip,
    /// Stop: every later push fails with [`FrameTooLarge`].
    Fail,
}

/// One unit handed on by the framer: `L` is `&[u8]` from [`LineFramer::push`],
/// `Vec<u8>` through [`spawn_reader`]'s channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<L> {
    /// A complete line, without its `\n` (and `\r`).
    Line(L),
    /// A line longer than the ceiling was dropped; `bytes` is how long it was.
    Oversized { bytes: usize },
}

impl Frame<&[u8]> {
    /// The frame with its line copied out of the framer's buffer, to be sent on.
    pub fn to_vec(&self) -> Frame<Vec<u8>> {
        match *self {
            Frame::Line(l) => Frame::Line(l.to_vec()),
            Frame::Oversized { bytes } => Frame::Oversized { bytes },
        }
    }
}

/// A line outgrew the ceiling under [`Oversize::Fail`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge {
    pub max_frame: usize,
}

/// Splits a byte stream into lines under a ceiling (see the module doc).
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    max_frame: usize,
    policy: Oversize,
    /// Bytes of the line being skipped, once it passed the ceiling.
    skipping: Option<usize>,
    failed: bool,
}

impl LineFramer {
    pub fn new(max_frame: usize, policy: Oversize) -> Self {
        Self {
            buf: Vec::new(),
            max_frame,
            policy,
            skipping: None,
            failed: false,
        }
    }

    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Bytes of an unfinished line held now (never more than `max_frame`).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feeds `chunk`, calling `on_frame` for each complete line (or skipped
    /// one). Under [`Oversize::Fail`], an error is final.
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        mut on_frame: impl FnMut(Frame<&[u8]>),
    ) -> Result<(), FrameTooLarge> {
        if self.failed {
            return Err(self.too_large());
        }
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = chunk.split_at(nl);
            self.end_line(line, &mut on_frame)?;
            chunk = &rest[1..];
        }
        self.hold(chunk)
    }

    /// End of input: an unfinished last line is handed on as if it had its newline.
    pub fn finish(&mut self, mut on_frame: impl FnMut(Frame<&[u8]>)) -> Result<(), FrameTooLarge> {
        if self.failed {
            return Err(self.too_large());
        }
        if self.skipping.is_some() || !self.buf.is_empty() {
            self.end_line(&[], &mut on_frame)?;
        }
        Ok(())
    }

    fn end_line(
        &mut self,
        line: &[u8],
        on_frame: &mut impl FnMut(Frame<&[u8]>),
    ) -> Result<(), FrameTooLarge> {
        if let Some(skipped) = self.skipping.take() {
            on_frame(Frame::Oversized {
                bytes: skipped + line.len(),
            });
            return Ok(());
        }
        let total = self.buf.len() + line.len();
        if total > self.max_frame {
            return match self.policy {
                Oversize::Fail => self.fail(),
                Oversize::Skip => {
                    self.buf = Vec::new();
                    on_frame(Frame::Oversized { bytes: total });
                    Ok(())
                }
            };
        }
        if self.buf.is_empty() {
            // Fast path: the whole line is in this chunk, no copy.
            on_frame(Frame::Line(strip_cr(line)));
        } else {
            self.buf.extend_from_slice(line);
            on_frame(Frame::Line(strip_cr(&self.buf)));
            self.buf.clear();
        }
        Ok(())
    }

    fn hold(&mut self, chunk: &[u8]) -> Result<(), FrameTooLarge> {
        if let Some(skipped) = &mut self.skipping {
            *skipped += chunk.len();
            return Ok(());
        }
        let total = self.buf.len() + chunk.len();
        if total <= self.max_frame {
            self.buf.extend_from_slice(chunk);
            return Ok(());
        }
        match self.policy {
            Oversize::Fail => self.fail(),
            Oversize::Skip => {
                // Free the partial line at once.
                self.buf = Vec::new();
                self.skipping = Some(total);
                Ok(())
            }
        }
    }

    fn too_large(&self) -> FrameTooLarge {
        FrameTooLarge {
            max_frame: self.max_frame,
        }
    }

    fn fail(&mut self) -> Result<(), FrameTooLarge> {
        self.failed = true;
        self.buf = Vec::new();
        Err(self.too_large())
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Frames `input` on a thread of its own under [`Oversize::Skip`]; the
/// receiver yields `None` at end of input (a last line without a newline still
/// counts).
pub fn spawn_reader<R: Read + Send + 'static>(
    input: R,
    max_line: usize,
) -> mpsc::Receiver<Frame<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::Builder::new()
        .name("gatehouse-stdin".into())
        .spawn(move || read_frames(input, max_line, &tx))
        .expect("the stdin thread starts");
    rx
}

fn read_frames<R: Read>(mut input: R, max_line: usize, tx: &mpsc::Sender<Frame<Vec<u8>>>) {
    let mut framer = LineFramer::new(max_line, Oversize::Skip);
    let mut buf = vec![0u8; 64 * 1024];
    let mut open = true;
    let mut send = |f: Frame<&[u8]>| {
        if open {
            open = tx.blocking_send(f.to_vec()).is_ok();
        }
    };
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed; treating it as closed");
                break;
            }
        };
        // Skip never fails.
        let _ = framer.push(&buf[..n], &mut send);
        if tx.is_closed() {
            return;
        }
    }
    let _ = framer.finish(&mut send);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Owned = Frame<Vec<u8>>;

    fn run(framer: &mut LineFramer, chunks: &[&[u8]]) -> (Vec<Owned>, Result<(), FrameTooLarge>) {
        let mut out = Vec::new();
        let mut collect = |f: Frame<&[u8]>| out.push(f.to_vec());
        for c in chunks {
            if let Err(e) = framer.push(c, &mut collect) {
                return (out, Err(e));
            }
        }
        (out, Ok(()))
    }

    fn line(s: &[u8]) -> Owned {
        Frame::Line(s.to_vec())
    }

    fn read_all(input: &'static [u8], max: usize) -> Vec<Owned> {
        let mut rx = spawn_reader(input, max);
        let mut out = Vec::new();
        while let Some(f) = rx.blocking_recv() {
            out.push(f);
        }
        out
    }

    #[test]
    fn reader_splits_trims_and_keeps_an_unterminated_last_line() {
        assert_eq!(
            read_all(b"a\r\nbc\n\nlast", 10),
            vec![line(b"a"), line(b"bc"), line(b""), line(b"last")]
        );
    }

    #[test]
    fn skip_reports_oversized_lines_and_goes_on() {
        assert_eq!(
            read_all(b"0123456789ABC\nok\n", 10),
            vec![Frame::Oversized { bytes: 13 }, line(b"ok")]
        );
        let mut f = LineFramer::new(4, Oversize::Skip);
        let (frames, r) = run(&mut f, &[b"ab", b"cdefg", b"hi\nxy\n"]);
        assert!(r.is_ok());
        assert_eq!(frames, vec![Frame::Oversized { bytes: 9 }, line(b"xy")]);
        assert_eq!(f.buffered(), 0);
    }

    #[test]
    fn splits_lines_across_chunks_and_strips_one_cr() {
        let mut d = LineFramer::new(100, Oversize::Fail);
        let (lines, r) = run(&mut d, &[b"{\"a\":1}\r\n{\"b\"", b":2}\n\r\r\n", b"tail"]);
        assert!(r.is_ok());
        assert_eq!(
            lines,
            vec![line(b"{\"a\":1}"), line(b"{\"b\":2}"), line(b"\r")]
        );
        assert_eq!(d.buffered(), 4);
    }

    #[test]
    fn endless_line_is_an_error_not_an_allocation() {
        let mut d = LineFramer::new(1024, Oversize::Fail);
        let chunk = [b'x'; 300];
        let mut n = 0;
        let err = loop {
            n += 1;
            if let Err(e) = d.push(&chunk, |_| {}) {
                break e;
            }
            assert!(d.buffered() <= 1024);
        };
        assert_eq!(err.max_frame, 1024);
        assert_eq!(n, 4, "fails on the chunk that would pass the ceiling");
        assert_eq!(d.buffered(), 0);
        assert!(d.push(b"\n", |_| panic!("no lines after failure")).is_err());
    }

    #[test]
    fn a_line_exactly_at_the_ceiling_is_fine() {
        let mut d = LineFramer::new(4, Oversize::Fail);
        let (lines, r) = run(&mut d, &[b"ab", b"cd\n"]);
        assert!(r.is_ok());
        assert_eq!(lines, vec![line(b"abcd")]);
        let (_, r) = run(&mut d, &[b"abcde\n"]);
        assert!(r.is_err());
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_frames(
            data in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), any::<u8>()], 0..400),
            cuts in proptest::collection::vec(any::<usize>(), 0..16),
            max in 1usize..64,
            skip in any::<bool>(),
        ) {
            let policy = if skip { Oversize::Skip } else { Oversize::Fail };
            let expected = run(&mut LineFramer::new(max, policy), &[&data]);
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for p in points.into_iter().chain([data.len()]) {
                chunks.push(&data[prev..p]);
                prev = p;
            }
            let mut pieces = LineFramer::new(max, policy);
            let got = run(&mut pieces, &chunks);
            prop_assert_eq!(&expected, &got);
            prop_assert!(pieces.buffered() <= max);
            let within = |f: &Owned| match f {
                Frame::Line(l) => l.len() <= max,
                Frame::Oversized { bytes } => *bytes > max,
            };
            prop_assert!(got.0.iter().all(within));
        }
    }
}
