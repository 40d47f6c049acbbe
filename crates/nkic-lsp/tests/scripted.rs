//! Drives the language server in-process with a scripted client over an
//! in-memory connection, and snapshots its responses and notifications.
//!
//! Temporary directories are written under the system's temp dir and
//! their paths are replaced by `$DIR` in snapshots.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use nkic_lsp::Options;
use serde_json::{Value, json};

const KERNEL: &str = r#"import nki
import nki.language as nl
from .util import TILE


def double(x):
    return nl.multiply(x, 2.0)


# nkic: args a=bfloat16[256,512]
@nki.jit
def add_kernel(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.load(a[i * TILE:(i + 1) * TILE, :])
        s = double(t)
        nl.store(out[i * TILE:(i + 1) * TILE, :], s)
    return out
"#;

const UTIL: &str = "\"\"\"Tile sizes shared by the kernels here.\"\"\"\n\nTILE = 128\n";

/// A fresh directory with the given files.
fn fixture(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nkic-lsp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

fn uri(dir: &std::path::Path, file: &str) -> String {
    format!("file://{}/{file}", dir.display())
}

/// The position of the `nth` occurrence of `needle` (plus `delta`
/// characters) in `text`, as an LSP position in UTF-16 units.
fn pos(text: &str, needle: &str, nth: usize, delta: usize) -> Value {
    let mut start = 0;
    for _ in 0..nth {
        start += text[start..].find(needle).unwrap() + 1;
    }
    let off = start + text[start..].find(needle).unwrap() + delta;
    let line = text[..off].matches('\n').count();
    let line_start = text[..off].rfind('\n').map_or(0, |i| i + 1);
    let character = text[line_start..off].encode_utf16().count();
    json!({"line": line, "character": character})
}

struct Client {
    conn: Connection,
    server: Option<JoinHandle<Result<bool, String>>>,
    next_id: i32,
    /// Notifications received while waiting for responses.
    notifications: Vec<Notification>,
    dir: String,
}

impl Client {
    fn start(dir: &std::path::Path, options: Options, capabilities: Value) -> (Client, Value) {
        let (server_side, client_side) = Connection::memory();
        let server = std::thread::spawn(move || nkic_lsp::serve(server_side, &options));
        let mut client = Client {
            conn: client_side,
            server: Some(server),
            next_id: 0,
            notifications: Vec::new(),
            dir: dir.display().to_string(),
        };
        let init = client.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
        );
        client.notify("initialized", json!({}));
        (client, init)
    }

    fn send(&self, msg: Message) {
        self.conn.sender.send(msg).unwrap();
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(Message::Notification(Notification::new(
            method.to_owned(),
            params,
        )));
    }

    fn recv(&self) -> Message {
        self.conn
            .receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers within a minute")
    }

    /// Sends a request and returns its whole response (result or error).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.send(Message::Request(Request::new(
            id.clone(),
            method.to_owned(),
            params,
        )));
        loop {
            match self.recv() {
                Message::Response(Response {
                    id: rid,
                    response_result,
                }) if rid == id => {
                    return match response_result {
                        Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
                        Ok(result) => json!({"result": result}),
                    };
                }
                Message::Notification(n) => self.notifications.push(n),
                other => panic!("unexpected message {other:?}"),
            }
        }
    }

    /// Waits for the diagnostics of `uri` at `version`; returns every
    /// version published for it before (and including) that one.
    fn diagnostics(&mut self, uri: &str, version: i32) -> (Value, Vec<i64>) {
        let mut versions = Vec::new();
        let mut pending: Vec<Notification> = std::mem::take(&mut self.notifications);
        pending.reverse();
        loop {
            let n = match pending.pop() {
                Some(n) => n,
                None => match self.recv() {
                    Message::Notification(n) => n,
                    other => panic!("unexpected message {other:?}"),
                },
            };
            if n.method != "textDocument/publishDiagnostics" || n.params["uri"] != uri {
                continue;
            }
            let v = n.params["version"].as_i64().unwrap_or(-1);
            versions.push(v);
            if v == i64::from(version) {
                self.notifications.extend(pending.into_iter().rev());
                return (n.params, versions);
            }
        }
    }

    /// Opens `file` of the fixture `dir` with `text`; its URI and first
    /// published diagnostics.
    fn open_file(&mut self, dir: &std::path::Path, file: &str, text: &str) -> (String, Value) {
        let file = uri(dir, file);
        self.open(&file, text);
        let (diags, _) = self.diagnostics(&file, 1);
        (file, diags)
    }

    fn open(&self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        );
    }

    /// Sends `shutdown` and `exit`; returns the shutdown response and the
    /// server's exit status.
    fn shutdown(mut self) -> (Value, Result<bool, String>) {
        let response = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let server = self.server.take().unwrap();
        (response, server.join().unwrap())
    }

    /// Pretty JSON with the temp dir replaced.
    fn show(&self, v: &Value) -> String {
        serde_json::to_string_pretty(v)
            .unwrap()
            .replace(&self.dir, "$DIR")
    }
}

#[test]
fn scripted_session() {
    let dir = fixture("session", &[("kern.py", KERNEL), ("util.py", UTIL)]);
    let (mut c, init) = Client::start(&dir, Options::default(), json!({}));
    insta::assert_snapshot!("initialize", c.show(&init));
    let (kern, diags) = c.open_file(&dir, "kern.py", KERNEL);
    insta::assert_snapshot!("open_diagnostics", c.show(&diags));

    let td = json!({"uri": kern});
    let hover_at = |c: &mut Client, needle: &str, nth: usize, delta: usize| {
        let r = c.request(
            "textDocument/hover",
            json!({"textDocument": td, "position": pos(KERNEL, needle, nth, delta)}),
        );
        c.show(&r)
    };
    insta::assert_snapshot!(
        "hover_tensor_in_loop",
        hover_at(&mut c, "t = nl.load", 0, 0)
    );
    insta::assert_snapshot!("hover_api_function", hover_at(&mut c, "nl.load", 0, 4));
    insta::assert_snapshot!("hover_compile_time_value", hover_at(&mut c, "TILE", 1, 1));
    insta::assert_snapshot!("hover_helper_parameter", hover_at(&mut c, "x)", 0, 0));

    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": td, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}}),
    );
    insta::assert_snapshot!("inlay_hints", c.show(&hints));

    let def = |c: &mut Client, needle: &str, nth: usize| {
        let r = c.request(
            "textDocument/definition",
            json!({"textDocument": td, "position": pos(KERNEL, needle, nth, 1)}),
        );
        c.show(&r)
    };
    insta::assert_snapshot!("definition_local", def(&mut c, "double(t)", 0));
    insta::assert_snapshot!("definition_cross_file", def(&mut c, "TILE", 2));
    insta::assert_snapshot!("definition_variable", def(&mut c, "t)", 0));

    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": td}));
    insta::assert_snapshot!("document_symbols", c.show(&symbols));

    // An edit that breaks the kernel: a tile of 256 partitions.
    let edit_pos = pos(KERNEL, "(i + 1) * TILE, :])", 0, 0);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": kern, "version": 2}, "contentChanges": [
            {"range": {"start": edit_pos, "end": edit_pos}, "text": "128 + "}
        ]}),
    );
    let (diags, _) = c.diagnostics(&kern, 2);
    insta::assert_snapshot!("change_diagnostics", c.show(&diags));

    let (response, status) = c.shutdown();
    assert_eq!(response, json!({"result": null}));
    assert_eq!(status, Ok(true));
}

#[test]
fn a_kernel_without_arguments_gets_one_information_diagnostic() {
    let text = KERNEL.replace("# nkic: args a=bfloat16[256,512]\n", "");
    let dir = fixture("noargs", &[("kern.py", &text), ("util.py", UTIL)]);
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let (kern, diags) = c.open_file(&dir, "kern.py", &text);
    insta::assert_snapshot!("no_arguments", c.show(&diags));
    // Hover still answers API questions; inlay hints are empty.
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": kern}, "position": pos(&text, "nl.ndarray", 0, 4)}),
    );
    assert!(
        r["result"]["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("nl.ndarray(")
    );
    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": kern}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}}),
    );
    assert_eq!(hints, json!({"result": []}));
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn arguments_from_nkic_toml() {
    let text = KERNEL.replace("# nkic: args a=bfloat16[256,512]\n", "");
    let manifest = "[\"kern.py\"]\nargs = [\"a=float32[256,64]\"]\n";
    let dir = fixture(
        "toml",
        &[
            ("kern.py", &text),
            ("util.py", UTIL),
            ("nkic.toml", manifest),
        ],
    );
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let (kern, diags) = c.open_file(&dir, "kern.py", &text);
    assert_eq!(diags["diagnostics"], json!([]), "{diags}");
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": kern}, "position": pos(&text, "out =", 0, 0)}),
    );
    let value = r["result"]["contents"]["value"].as_str().unwrap();
    assert!(value.contains("[256 × 64] float32 @ shared_hbm"), "{value}");

    // A broken manifest is reported in the document, pointing at the
    // manifest.
    std::fs::write(
        dir.join("nkic.toml"),
        "[\"kern.py\"]\nargs = [\"a=float32[x]\"]\n",
    )
    .unwrap();
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": kern}}),
    );
    let (diags, _) = c.diagnostics(&kern, 1);
    insta::assert_snapshot!("broken_manifest", c.show(&diags));
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn utf8_positions_when_offered() {
    let text = "# ünïcödé 𝄞\nx = (1 +\n";
    let dir = fixture("utf8", &[("u.py", text)]);
    let caps = json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}});
    let (mut c, init) = Client::start(&dir, Options::default(), caps);
    assert_eq!(init["result"]["capabilities"]["positionEncoding"], "utf-8");
    let (u, diags) = c.open_file(&dir, "u.py", "x = 1  # 𝄞 é\ny = (\n");
    let d = &diags["diagnostics"][0];
    assert_eq!(d["severity"], 1, "{diags}");
    // An edit after the multi-byte characters, in byte columns: replace
    // the comment's `é` (bytes 14..16 of line 0) with `e`.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 14}, "end": {"line": 0, "character": 16}}, "text": "e"},
            {"range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 5}}, "text": "1)"}
        ]}),
    );
    let (diags, _) = c.diagnostics(&u, 2);
    let msgs: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(msgs, ["I0001"], "{diags}");
    let symbols = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": u}}),
    );
    assert_eq!(symbols["result"][0]["name"], "x");
    assert_eq!(symbols["result"][1]["name"], "y");
    assert_eq!(
        symbols["result"][1]["range"]["end"],
        json!({"line": 1, "character": 7})
    );
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn the_server_survives_bad_requests_panics_and_garbage() {
    let dir = fixture("robust", &[("kern.py", KERNEL), ("util.py", UTIL)]);
    let options = Options {
        panic_method: Some("nkic/panic".to_owned()),
        ..Options::default()
    };
    let (mut c, _) = Client::start(&dir, options, json!({}));
    let kern = uri(&dir, "kern.py");
    let r = c.request("textDocument/formatting", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = c.request("textDocument/hover", json!({"nonsense": true}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": "file:///not/open.py"}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = c.request("nkic/panic", json!({}));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("test hook")
    );
    // Malformed notifications are ignored.
    c.notify("textDocument/didOpen", json!({"textDocument": 7}));
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": kern, "version": 9}, "contentChanges": []}),
    );
    // A document of garbage still gets diagnostics, and the server serves.
    let garbage = "\u{0}\u{7f}def (((: \u{feff}\t\t  ]]] \"\"\"\n  \tx = 'unterminated\n@@@\n";
    c.open(&kern, garbage);
    let (diags, _) = c.diagnostics(&kern, 1);
    assert!(!diags["diagnostics"].as_array().unwrap().is_empty());
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": kern}, "position": {"line": 1, "character": 3}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    // Edits with ranges past the end clamp.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": kern, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 99, "character": 0}, "end": {"line": 120, "character": 4}}, "text": "\n"},
            {"text": KERNEL}
        ]}),
    );
    let (diags, _) = c.diagnostics(&kern, 2);
    assert_eq!(diags["diagnostics"], json!([]), "{diags}");
    // After shutdown, requests are refused until exit.
    let r = c.request("shutdown", Value::Null);
    assert_eq!(r, json!({"result": null}));
    let r = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": kern}}),
    );
    assert_eq!(r["error"]["code"], -32600, "{r}");
    c.notify("exit", Value::Null);
    assert_eq!(c.server.take().unwrap().join().unwrap(), Ok(true));
}

#[test]
fn exit_without_shutdown_is_not_clean() {
    let dir = fixture("exit", &[]);
    let (c, _) = Client::start(&dir, Options::default(), json!({}));
    c.notify("exit", Value::Null);
    let mut c = c;
    assert_eq!(c.server.take().unwrap().join().unwrap(), Ok(false));
}

#[test]
fn only_the_latest_text_is_published() {
    let dir = fixture("latest", &[("kern.py", KERNEL), ("util.py", UTIL)]);
    let options = Options {
        debounce: Duration::from_millis(200),
        ..Options::default()
    };
    let (mut c, _) = Client::start(&dir, options, json!({}));
    let kern = uri(&dir, "kern.py");
    c.open(&kern, KERNEL);
    // A burst of edits, each a complete text; the last one has an error.
    for v in 2..=6 {
        let text = if v == 6 {
            KERNEL.replace("return out", "return out +")
        } else {
            KERNEL.replace("2.0", &format!("{v}.0"))
        };
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": kern, "version": v}, "contentChanges": [{"text": text}]}),
        );
    }
    let (diags, versions) = c.diagnostics(&kern, 6);
    assert!(
        versions.iter().all(|v| *v == 1 || *v == 6),
        "stale versions published: {versions:?}"
    );
    assert_eq!(diags["diagnostics"][0]["code"], "E0010", "{diags}");
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn inlay_hints_can_be_turned_off() {
    let dir = fixture("nohints", &[("kern.py", KERNEL), ("util.py", UTIL)]);
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let kern = uri(&dir, "kern.py");
    c.open(&kern, KERNEL);
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}});
    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": kern}, "range": range}),
    );
    assert_eq!(hints["result"].as_array().unwrap().len(), 3, "{hints}");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"nkic": {"inlayHints": false}}}),
    );
    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": kern}, "range": range}),
    );
    assert_eq!(hints, json!({"result": []}));
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn hover_on_tensor_methods_and_later_uses() {
    let text = "import nki\nimport nki.language as nl\n\n# nkic: args a=float32[256,64]\n@nki.jit\ndef k(a):\n    v = a.reshape((2, 128, 64))\n    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(v[1])\n    nl.store(out, t)\n    return out\n";
    let dir = fixture("methods", &[("k.py", text)]);
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let (k, diags) = c.open_file(&dir, "k.py", text);
    assert_eq!(diags["diagnostics"], json!([]), "{diags}");
    let hover = |c: &mut Client, needle: &str, nth: usize, delta: usize| {
        let r = c.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": k}, "position": pos(text, needle, nth, delta)}),
        );
        r["result"]["contents"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let method = hover(&mut c, "reshape", 0, 2);
    assert!(method.starts_with("```python\ntensor.reshape("), "{method}");
    let use_of_t = hover(&mut c, "t)", 0, 0);
    assert!(
        use_of_t.contains("t: [128(P) × 64] float32 @ sbuf")
            && use_of_t.contains("assigned at line 9"),
        "{use_of_t}"
    );
    let view = hover(&mut c, "v =", 0, 0);
    assert!(
        view.contains("v: [2 × 128 × 64] float32 @ shared_hbm"),
        "{view}"
    );
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn a_crashing_analysis_becomes_a_diagnostic() {
    let dir = fixture("crash", &[("kern.py", KERNEL), ("util.py", UTIL)]);
    let options = Options {
        panic_in_analysis: true,
        ..Options::default()
    };
    let (mut c, _) = Client::start(&dir, options, json!({}));
    let (kern, diags) = c.open_file(&dir, "kern.py", KERNEL);
    let d = &diags["diagnostics"][0];
    assert_eq!(d["code"], "E9011", "{diags}");
    assert!(d["message"].as_str().unwrap().contains("test hook"));
    // The syntax tree still serves symbols and definitions.
    let symbols = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": kern}}),
    );
    assert_eq!(symbols["result"][1]["name"], "add_kernel", "{symbols}");
    assert_eq!(c.shutdown().1, Ok(true));
}

#[test]
fn a_compile_time_bomb_leaves_the_server_answering() {
    // `f(40)` makes 2^40 calls: the evaluation budget (E0260) ends the
    // analysis, and `shutdown` sent meanwhile is answered after it.
    let text = "import nki\nimport nki.language as nl\n\n\ndef f(n):\n    if n == 0:\n        return 1\n    return f(n - 1) + f(n - 1)\n\n\n# nkic: args a=float32[128,64]\n@nki.jit\ndef k(a):\n    f(40)\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    nl.store(out, nl.load(a))\n    return out\n";
    let dir = fixture("bomb", &[("kern.py", text)]);
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let (_, diags) = c.open_file(&dir, "kern.py", text);
    let codes: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(codes, ["E0260"], "{diags}");
    c.open(&uri(&dir, "again.py"), text);
    let (response, status) = c.shutdown();
    assert_eq!(response, json!({"result": null}));
    assert_eq!(status, Ok(true));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_manifest_that_is_not_utf8_is_reported() {
    let text = KERNEL.replace("# nkic: args a=bfloat16[256,512]\n", "");
    let dir = fixture("toml-bytes", &[("kern.py", &text), ("util.py", UTIL)]);
    std::fs::write(
        dir.join("nkic.toml"),
        b"[\"kern.py\"]\nargs = [\"a=\xff\"]\n",
    )
    .unwrap();
    let (mut c, _) = Client::start(&dir, Options::default(), json!({}));
    let (_, diags) = c.open_file(&dir, "kern.py", &text);
    let d = &diags["diagnostics"][0];
    assert_eq!(d["code"], "E9010", "{diags}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .ends_with("nkic.toml` is not valid UTF-8"),
        "{diags}"
    );
    assert_eq!(c.shutdown().1, Ok(true));
    let _ = std::fs::remove_dir_all(&dir);
}
