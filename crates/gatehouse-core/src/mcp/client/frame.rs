//! Newline-delimited framing of the child's stdout, with a ceiling: a line
//! longer than [`LineDecoder::max_frame`] without a newline is an error, and the
//! decoder never holds more than that many bytes.

/// A line that outgrew the ceiling before its newline arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge {
    pub max_frame: usize,
}

/// Splits a byte stream into lines (without `\n`; a trailing `\r` is kept for
/// the JSON parser to reject or accept as whitespace).
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    max_frame: usize,
    failed: bool,
}

impl LineDecoder {
    pub fn new(max_frame: usize) -> Self {
        Self {
            buf: Vec::new(),
            max_frame,
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

    /// Feeds `chunk`, calling `on_line` for each complete line. After an error
    /// the decoder stays failed: the stream has no trustworthy boundary left.
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        mut on_line: impl FnMut(&[u8]),
    ) -> Result<(), FrameTooLarge> {
        if self.failed {
            return Err(FrameTooLarge {
                max_frame: self.max_frame,
            });
        }
        while let Some(nl) = memchr(chunk) {
            let (line, rest) = chunk.split_at(nl);
            if self.buf.len() + line.len() > self.max_frame {
                return self.fail();
            }
            if self.buf.is_empty() {
                // Fast path: the whole line is in this chunk, no copy.
                on_line(line);
            } else {
                self.buf.extend_from_slice(line);
                on_line(&self.buf);
                self.buf.clear();
            }
            chunk = &rest[1..];
        }
        if self.buf.len() + chunk.len() > self.max_frame {
            return self.fail();
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    fn fail(&mut self) -> Result<(), FrameTooLarge> {
        self.failed = true;
        self.buf = Vec::new();
        Err(FrameTooLarge {
            max_frame: self.max_frame,
        })
    }
}

fn memchr(haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lines_of(
        dec: &mut LineDecoder,
        chunks: &[&[u8]],
    ) -> (Vec<Vec<u8>>, Result<(), FrameTooLarge>) {
        let mut out = Vec::new();
        for c in chunks {
            if let Err(e) = dec.push(c, |l| out.push(l.to_vec())) {
                return (out, Err(e));
            }
        }
        (out, Ok(()))
    }

    #[test]
    fn splits_lines_across_chunks() {
        let mut d = LineDecoder::new(100);
        let (lines, r) = lines_of(&mut d, &[b"{\"a\":1}\n{\"b\"", b":2}\n\n", b"tail"]);
        assert!(r.is_ok());
        assert_eq!(
            lines,
            vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec(), b"".to_vec()]
        );
        assert_eq!(d.buffered(), 4);
    }

    #[test]
    fn endless_line_is_an_error_not_an_allocation() {
        let mut d = LineDecoder::new(1024);
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
        let mut d = LineDecoder::new(4);
        let (lines, r) = lines_of(&mut d, &[b"ab", b"cd\n"]);
        assert!(r.is_ok());
        assert_eq!(lines, vec![b"abcd".to_vec()]);
        let (_, r) = lines_of(&mut d, &[b"abcde\n"]);
        assert!(r.is_err());
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_lines(
            data in proptest::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..400),
            cuts in proptest::collection::vec(any::<usize>(), 0..16),
            max in 1usize..64,
        ) {
            let mut whole = LineDecoder::new(max);
            let expected = lines_of(&mut whole, &[&data]);
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for p in points.into_iter().chain([data.len()]) {
                chunks.push(&data[prev..p]);
                prev = p;
            }
            let mut pieces = LineDecoder::new(max);
            let got = lines_of(&mut pieces, &chunks);
            prop_assert_eq!(&expected.0, &got.0);
            prop_assert_eq!(expected.1, got.1);
            prop_assert!(pieces.buffered() <= max);
            prop_assert!(got.0.iter().all(|l| l.len() <= max));
        }
    }
}
