//! End to end: starts `nkic lsp` as a separate process and talks
//! JSON-RPC to it over pipes (`Content-Length` framing), as an editor does.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const KERNEL: &str = "import nki\nimport nki.language as nl\n\n# nkic: args a=float32[128,256]\n@nki.jit\ndef copy_kernel(a):\n    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(out, t)\n    return out\n";

struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start() -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nkic"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("nkic starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, msg: &Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut length = None;
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the server closed its output");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                length = Some(v.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; length.expect("a Content-Length header")];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Receives until the response to `id`, skipping notifications.
    fn response(&mut self, id: i64) -> Value {
        loop {
            let msg = self.recv();
            if msg["id"] == id {
                return msg;
            }
        }
    }
}

#[test]
fn nkic_lsp_serves_over_pipes() {
    let dir = std::env::temp_dir().join(format!("nkic-lsp-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("copy.py");
    std::fs::write(&path, KERNEL).unwrap();
    let uri = format!("file://{}", path.display());

    let mut peer = Peer::start();
    peer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": null, "rootUri": null, "capabilities": {}}}));
    let init = peer.response(1);
    assert_eq!(init["result"]["serverInfo"]["name"], "nkic");
    assert_eq!(init["result"]["capabilities"]["hoverProvider"], true);
    peer.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));

    // A broken version first: the diagnostics name the problem.
    let broken = KERNEL.replace("nl.store(out, t)", "nl.store(out, t +)");
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": broken}}}),
    );
    let diags = loop {
        let msg = peer.recv();
        if msg["method"] == "textDocument/publishDiagnostics" {
            break msg;
        }
    };
    assert_eq!(diags["params"]["version"], 1);
    assert_eq!(diags["params"]["diagnostics"][0]["code"], "E0010");
    assert_eq!(
        diags["params"]["diagnostics"][0]["range"]["start"]["line"],
        8
    );

    // Fixed by an edit: no diagnostics, and hover knows the tile.
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": KERNEL}]}}),
    );
    let diags = loop {
        let msg = peer.recv();
        if msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["version"] == 2 {
            break msg;
        }
    };
    assert_eq!(diags["params"]["diagnostics"], json!([]));
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 7, "character": 4}}}),
    );
    let hover = peer.response(2);
    let text = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(text.contains("t: [128(P) × 256] float32 @ sbuf"), "{text}");

    // A body that is not JSON, and JSON that is not a message, get error
    // replies (JSON-RPC 2.0 §5.1), and the server keeps serving.
    write!(peer.stdin, "Content-Length: 10\r\n\r\n{{not json}}").unwrap();
    let reply = peer.recv();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null);
    peer.send(&json!([1, 2]));
    assert_eq!(peer.recv()["error"]["code"], -32600);

    // An unsupported request is an error response, not an exit.
    peer.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/rename", "params": {}}));
    assert_eq!(peer.response(3)["error"]["code"], -32601);

    peer.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown", "params": null}));
    assert_eq!(peer.response(4)["result"], Value::Null);
    peer.send(&json!({"jsonrpc": "2.0", "method": "exit", "params": null}));
    let mut status = None;
    for _ in 0..200 {
        if let Some(s) = peer.child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = status.expect("nkic lsp exits after `exit`");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
