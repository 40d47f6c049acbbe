//! The stdio transport: `Content-Length` framed JSON-RPC on standard input
//! and output, feeding an in-memory [`Connection`].
//!
//! Unlike `lsp_server::Connection::stdio`, a frame whose body is not JSON
//! is answered with a `-32700` parse error and a JSON value that is not an
//! LSP message (an array, a number, an object without `method`/`id`) with
//! `-32600` invalid request (JSON-RPC 2.0 §5.1), and the server keeps
//! serving. Only a broken header (no `Content-Length`) or the end of input
//! ends the reader. Frames are written whole under the standard-output
//! lock, so error replies from the reader never interleave with the
//! server's messages.

use std::io::{self, BufRead, Write};
use std::thread::JoinHandle;

use lsp_server::{Connection, Message};
use serde_json::{Value, json};

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

/// One frame's body, `Ok(None)` at the end of input, or an error for a
/// broken header.
pub fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
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
    let mut body = vec![0; length];
    input.read_exact(&mut body)?;
    Ok(Some(body))
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
        while let Some(body) = read_frame(&mut input)? {
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
        let body = read_frame(&mut input).unwrap().unwrap();
        let err = decode(&body).unwrap_err();
        assert_eq!(err["error"]["code"], -32700);
        assert_eq!(err["id"], Value::Null);
        let body = read_frame(&mut input).unwrap().unwrap();
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
}
