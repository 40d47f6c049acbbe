//! Latency of diagnostics as you type: the time from sending a
//! `didChange` for a 300-line kernel to receiving its
//! `publishDiagnostics`, through an in-memory connection, with the
//! default debounce (what an editor sees) and with none (the analysis
//! alone). The target is 100 ms on the development machine.
//!
//! Run with `cargo bench -p nkic-lsp --bench latency`.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use nkic_lsp::Options;
use serde_json::{Value, json};

/// A 300-line kernel: loads, a long chain of element-wise ops in an
/// unrolled loop and straight-line code, a store.
fn kernel(variant: usize) -> String {
    let mut s = String::from(
        "import nki\nimport nki.language as nl\n\n# nkic: args a=float32[256,512] b=float32[256,512]\n@nki.jit\ndef big(a, b):\n    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n    for i in nl.affine_range(2):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n        y = nl.load(b[i * 128:(i + 1) * 128, :])\n        acc = nl.add(x, y)\n",
    );
    let mut lines = s.lines().count();
    let mut k = 0;
    while lines < 296 {
        s.push_str(&format!(
            "        t{k} = nl.multiply(acc, {}.0)\n        acc = nl.add(acc, t{k})\n",
            k + variant % 7 + 1
        ));
        lines += 2;
        k += 1;
    }
    s.push_str("        nl.store(out[i * 128:(i + 1) * 128, :], acc)\n    return out\n");
    s
}

struct Session {
    conn: Connection,
    server: Option<std::thread::JoinHandle<Result<bool, String>>>,
    version: i32,
}

const URI: &str = "file:///bench/big.py";

impl Session {
    fn start(options: Options) -> Session {
        let (server_side, conn) = Connection::memory();
        let server = std::thread::spawn(move || nkic_lsp::serve(server_side, &options));
        let s = Session {
            conn,
            server: Some(server),
            version: 1,
        };
        s.conn
            .sender
            .send(Message::Request(Request::new(
                RequestId::from(1),
                "initialize".to_owned(),
                json!({"capabilities": {}}),
            )))
            .unwrap();
        let _ = s.conn.receiver.recv().unwrap();
        s.notify("initialized", json!({}));
        s.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": kernel(0)}}),
        );
        s.wait(1);
        s
    }

    fn notify(&self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Message::Notification(Notification::new(
                method.to_owned(),
                params,
            )))
            .unwrap();
    }

    fn wait(&self, version: i32) {
        loop {
            if let Message::Notification(n) = self.conn.receiver.recv().unwrap()
                && n.method == "textDocument/publishDiagnostics"
                && n.params["version"] == version
            {
                let diags = n.params["diagnostics"].as_array().unwrap();
                assert!(diags.is_empty(), "the bench kernel has errors: {diags:?}");
                return;
            }
        }
    }

    /// Sends one change and returns the time until its diagnostics.
    fn change(&mut self) -> Duration {
        self.version += 1;
        let text = kernel(self.version as usize);
        let start = Instant::now();
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": self.version}, "contentChanges": [{"text": text}]}),
        );
        self.wait(self.version);
        start.elapsed()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.conn.sender.send(Message::Request(Request::new(
            RequestId::from(2),
            "shutdown".to_owned(),
            Value::Null,
        )));
        self.notify("exit", Value::Null);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

fn bench(c: &mut Criterion) {
    assert!((295..=305).contains(&kernel(0).lines().count()));
    let mut group = c.benchmark_group("diagnostics_after_change_300_lines");
    group.sample_size(20);
    for (name, options) in [
        ("default_debounce", Options::default()),
        (
            "no_debounce",
            Options {
                debounce: Duration::ZERO,
                ..Options::default()
            },
        ),
    ] {
        let mut session = Session::start(options);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| session.change()).sum());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
