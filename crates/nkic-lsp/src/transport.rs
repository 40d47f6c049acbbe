//! The stdio transport: `Content-Length` framed JSON-RPC on standard input
//! and output, feeding an in-memory [`Connection`].
//!
//! Unlike `lsp_server::Connection::stdio`, a frame whose body is not JSON
//! is answered with a `-32700` parse error and a JSON value that is not an
//! LSP message (an array, a number, an object without `method`/`id`) with
//! `-32600` invalid request (JSON-RPC 2.0 §5.1), and the server keeps
//! serving. A frame longer than [`MAX_FRAME_BYTES`] is skipped unread and
//! answered with `-32600` (its id cannot be known). Only a broken header (no
//! `Content-Length`, or a header line longer than [`MAX_HEADER_LINE`]) or the
//! end of input ends the reader. Frames are written whole under the standard-output
//! lock, so error replies from the reader never interleave with the
//! server's messages.

use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

use lsp_server::{Connection, Message};
use serde_json::{Value, json};

/// The longest frame body the server reads (64 MiB, far above any real
/// document): a longer `Content-Length` is skipped and answered with an error
/// instead of being allocated.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// The longest header line the server reads.
pub const MAX_HEADER_LINE: u64 = 4096;

/// One frame read from the input.
#[derive(Debug)]
pub enum Frame {
    /// The frame's body.
    Body(Vec<u8>),
    /// A frame longer than [`MAX_FRAME_BYTES`], skipped: its length.
    TooLarge(u64),
}

/// The reader and writer threads of a stdio connection.
pub struct Threads {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl Threads {
    /// Waits for the writer (which ends when the server drops its side)
    /// and returns the first IO error. The reader is not joined: it may be
    /// blocked on standard input after `exit`, and ends with the process.
    pub fn join(self) -> io::Result<()> {
        let writer = self
            .writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked")));
        if self.reader.is_finished() {
            self.reader
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the reader thread panicked")))?;
        }
        writer
    }
}

/// Writes one frame to standard output, whole.
fn write_frame(body: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body)?;
    out.flush()
}

/// One frame, `Ok(None)` at the end of input, or an error for a broken
/// header.
pub fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Frame>> {
    let mut length: Option<u64> = None;
    let mut saw_header = false;
    loop {
        let mut raw = Vec::new();
        let n = input
            .by_ref()
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut raw)?;
        if n as u64 == MAX_HEADER_LINE && !raw.ends_with(b"\n") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message header line longer than {MAX_HEADER_LINE} bytes"),
            ));
        }
        let line = String::from_utf8_lossy(&raw);
        if n == 0 {
            return if saw_header {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input ended inside a message header",
                ))
            } else {
                Ok(None)
            };
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_header {
                break;
            }
            // Blank lines between frames are tolerated.
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a message header without a valid Content-Length",
        )
    })?;
    if length > MAX_FRAME_BYTES as u64 {
        let skipped = io::copy(&mut input.by_ref().take(length), &mut io::sink())?;
        if skipped < length {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input ended inside a message body",
            ));
        }
        return Ok(Some(Frame::TooLarge(length)));
    }
    // Read what arrives rather than allocating the announced length first.
    let mut body = Vec::new();
    input.by_ref().take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the input ended inside a message body",
        ));
    }
    Ok(Some(Frame::Body(body)))
}

/// The error reply to a frame longer than [`MAX_FRAME_BYTES`].
pub fn too_large(length: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": null,
           "error": {"code": -32600, "message": format!(
               "Invalid Request: a message of {length} bytes is longer than the {MAX_FRAME_BYTES}-byte limit")}})
}

/// What one frame's body is: a message, or the error reply it gets.
pub fn decode(body: &[u8]) -> Result<Message, Value> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        json!({"jsonrpc": "2.0", "id": null,
               "error": {"code": -32700, "message": format!("Parse error: {e}")}})
    })?;
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    serde_json::from_value::<Message>(value).map_err(|e| {
        json!({"jsonrpc": "2.0", "id": id,
               "error": {"code": -32600, "message": format!("Invalid Request: {e}")}})
    })
}

/// Starts the transport; the returned connection is the server's side.
pub fn stdio() -> (Connection, Threads) {
    let (server, client) = Connection::memory();
    let Connection { sender, receiver } = client;
    let writer = std::thread::spawn(move || -> io::Result<()> {
        for msg in receiver {
            let mut buf = Vec::new();
            msg.write(&mut buf)?;
            // `Message::write` frames the message itself.
            let mut out = io::stdout().lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
        Ok(())
    });
    let reader = std::thread::spawn(move || -> io::Result<()> {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        while let Some(frame) = read_frame(&mut input)? {
            let body = match frame {
                Frame::Body(body) => body,
                Frame::TooLarge(length) => {
                    write_frame(too_large(length).to_string().as_bytes())?;
                    continue;
                }
            };
            match decode(&body) {
                Ok(msg) => {
                    let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
                    if sender.send(msg).is_err() || is_exit {
                        break;
                    }
                }
                Err(reply) => write_frame(reply.to_string().as_bytes())?,
            }
        }
        Ok(())
    });
    (server, Threads { reader, writer })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_bad_bodies() {
        let text = "Content-Length: 10\r\n\r\n{not json}\r\ncontent-length:  5\r\nX: y\r\n\r\n[1,2]Content-Length: 3\r\n\r\n";
        let mut input = io::Cursor::new(text.as_bytes());
        let body = body_of(read_frame(&mut input));
        let err = decode(&body).unwrap_err();
        assert_eq!(err["error"]["code"], -32700);
        assert_eq!(err["id"], Value::Null);
        let body = body_of(read_frame(&mut input));
        assert_eq!(decode(&body).unwrap_err()["error"]["code"], -32600);
        // A body cut short by the end of input is an error.
        assert!(read_frame(&mut input).is_err());

        let bad_id = br#"{"id": 7, "params": 1}"#;
        let err = decode(bad_id).unwrap_err();
        assert_eq!(err["id"], 7);
        assert_eq!(err["error"]["code"], -32600);
        let ok = br#"{"jsonrpc": "2.0", "method": "initialized", "params": {}}"#;
        assert!(matches!(decode(ok), Ok(Message::Notification(_))));

        let mut empty = io::Cursor::new(&b""[..]);
        assert!(read_frame(&mut empty).unwrap().is_none());
        let mut no_length = io::Cursor::new(&b"X-Other: 1\r\n\r\n{}"[..]);
        assert!(read_frame(&mut no_length).is_err());
    }

    fn body_of(frame: io::Result<Option<Frame>>) -> Vec<u8> {
        match frame.unwrap().unwrap() {
            Frame::Body(body) => body,
            Frame::TooLarge(n) => panic!("a frame of {n} bytes was skipped"),
        }
    }

    /// A huge `Content-Length` is never allocated: a body that does arrive
    /// is skipped and the next frame is read; one that does not is an error
    /// without reading further. A header line without an end is refused.
    #[test]
    fn huge_frames_are_skipped() {
        let huge = MAX_FRAME_BYTES + 1;
        let mut text = format!("Content-Length: {huge}\r\n\r\n").into_bytes();
        text.extend(std::iter::repeat_n(b'x', huge));
        text.extend(b"Content-Length: 2\r\n\r\n{}");
        let mut input = io::Cursor::new(text);
        let frame = read_frame(&mut input).unwrap().unwrap();
        assert!(
            matches!(frame, Frame::TooLarge(n) if n == huge as u64),
            "{frame:?}"
        );
        assert_eq!(too_large(huge as u64)["error"]["code"], -32600);
        assert_eq!(body_of(read_frame(&mut input)), b"{}");

        let mut cut = io::Cursor::new(&b"Content-Length: 1000000000000\r\n\r\n{}"[..]);
        assert!(read_frame(&mut cut).is_err());
        let endless = vec![b'X'; 10_000];
        assert!(read_frame(&mut io::Cursor::new(endless)).is_err());
    }
}
