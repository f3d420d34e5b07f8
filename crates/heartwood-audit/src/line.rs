//! Reading newline-terminated records with a bound on line length, so a damaged or hostile file
//! cannot make a reader allocate without limit.

use std::io::{self, BufRead};

/// One read from a line-oriented file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A whole line; the buffer holds it without its newline.
    Complete,
    /// Bytes at the end of the file with no newline after them (held in the buffer).
    Unterminated,
    /// A line longer than the limit; the buffer is cleared and the reader left mid-line.
    TooLong,
    /// End of file.
    End,
}

/// Reads the next line into `buf` (cleared first), holding at most `max` bytes.
pub(crate) fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Line::End
            } else {
                Line::Unterminated
            });
        }
        let (take, found) = match memchr::memchr(b'\n', available) {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max {
            buf.clear();
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take + usize::from(found));
        if found {
            return Ok(Line::Complete);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = io::BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).expect("read");
            let stop = matches!(line, Line::End | Line::TooLong | Line::Unterminated);
            out.push((line, buf.clone()));
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn splits_on_newlines_across_buffer_refills() {
        let got = lines(b"alpha\nbe\n\ngamma", 100);
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"alpha".to_vec()),
                (Line::Complete, b"be".to_vec()),
                (Line::Complete, b"".to_vec()),
                (Line::Unterminated, b"gamma".to_vec()),
            ]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_reported_not_buffered() {
        assert_eq!(lines(b"abc\nabcdefgh\n", 5)[1], (Line::TooLong, Vec::new()));
        assert_eq!(
            lines(b"abcde\n", 5),
            vec![(Line::Complete, b"abcde".to_vec()), (Line::End, vec![])]
        );
    }
}
