//! The main loop: initialization, document state, debounced analysis,
//! request dispatch with panic isolation, and the shutdown/exit protocol.
//!
//! # Scheduling
//!
//! Everything runs on one thread. A `didOpen` schedules an analysis at
//! once, a `didChange` after [`Options::debounce`] (a burst of keystrokes
//! is analysed once). While no analysis is due the loop blocks on the
//! connection; when one is due it analyses the latest text. Before
//! publishing, it takes every message that arrived meanwhile: if one of
//! them changes or closes the document, the result is stale and is not
//! published (the change schedules a new analysis). A request about a
//! document whose analysis is pending first brings it up to date, so
//! answers always match the latest text. Any change also schedules the
//! other open documents again, since they may import the changed one.
//!
//! # Robustness
//!
//! Unknown requests get `MethodNotFound`; malformed parameters
//! `InvalidParams`; a panic inside a handler or an analysis is caught and
//! becomes an `InternalError` response (or an error diagnostic), and the
//! server keeps serving. After `shutdown` every request but `exit` gets
//! `InvalidRequest`; `exit` ends the loop.

use std::collections::{BTreeMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use nkic_diag::{Diagnostic, Span};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::analysis::Analysis;
use crate::convert::{self, Encoding};
use crate::hover;
use crate::syntax::{self, Definition};

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long after a change the document is analysed.
    pub debounce: Duration,
    /// Test hook: a request with this method panics inside its handler, so
    /// tests can check that panics become error responses. `None` in
    /// `nkic lsp`.
    pub panic_method: Option<String>,
    /// Test hook: every analysis panics, so tests can check that a crash
    /// of the front half becomes an `E9011` diagnostic. `false` in
    /// `nkic lsp`.
    pub panic_in_analysis: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            debounce: Duration::from_millis(20),
            panic_method: None,
            panic_in_analysis: false,
        }
    }
}

/// One open document.
struct Doc {
    uri: lsp::Uri,
    /// The file path of a `file://` document, else the URI text.
    path: String,
    text: String,
    version: i32,
    /// When its analysis is due, if one is pending.
    due: Option<Instant>,
    analysis: Option<Analysis>,
}

struct Server<'c> {
    conn: &'c Connection,
    options: Options,
    encoding: Encoding,
    inlay_hints: bool,
    docs: BTreeMap<String, Doc>,
    /// Messages taken from the connection but not handled yet.
    queue: VecDeque<Message>,
    shut_down: bool,
}

/// What a request handler returns: a result value or a protocol error.
type Reply = Result<Value, (ErrorCode, String)>;

/// Serves one client on `connection` until `exit` (or until the client
/// goes away). Returns whether `shutdown` came before `exit`.
pub fn serve(connection: Connection, options: &Options) -> Result<bool, String> {
    let (id, params) = connection
        .initialize_start()
        .map_err(|e| format!("language server initialization failed: {e}"))?;
    let params: lsp::InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let encoding = Encoding::negotiate(
        params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_deref()),
    );
    let mut inlay_hints = true;
    if let Some(opts) = &params.initialization_options {
        read_settings(opts, &mut inlay_hints);
    }
    let result = lsp::InitializeResult {
        capabilities: capabilities(encoding),
        server_info: Some(lsp::ServerInfo {
            name: "nkic".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
    };
    let result = serde_json::to_value(result).map_err(|e| e.to_string())?;
    connection
        .initialize_finish(id, result)
        .map_err(|e| format!("language server initialization failed: {e}"))?;
    let mut server = Server {
        conn: &connection,
        options: options.clone(),
        encoding,
        inlay_hints,
        docs: BTreeMap::new(),
        queue: VecDeque::new(),
        shut_down: false,
    };
    Ok(server.run())
}

fn capabilities(encoding: Encoding) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                ..lsp::TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        ..lsp::ServerCapabilities::default()
    }
}

/// Reads `{"nkic": {"inlayHints": bool}}` or `{"inlayHints": bool}`.
fn read_settings(value: &Value, inlay_hints: &mut bool) {
    let settings = value.get("nkic").unwrap_or(value);
    if let Some(on) = settings.get("inlayHints").and_then(Value::as_bool) {
        *inlay_hints = on;
    }
}

fn params<P: DeserializeOwned>(value: Value) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(value)
        .map_err(|e| (ErrorCode::InvalidParams, format!("invalid parameters: {e}")))
}

/// The reply of a request: its parameters decoded, `handler` run on them
/// and its result encoded.
fn answer<P: DeserializeOwned, R: Serialize>(
    value: Value,
    handler: impl FnOnce(&P) -> Result<R, (ErrorCode, String)>,
) -> Reply {
    let result = handler(&params(value)?)?;
    serde_json::to_value(result).map_err(|e| (ErrorCode::InternalError, e.to_string()))
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

impl Server<'_> {
    fn send(&self, msg: Message) {
        // A closed connection ends the loop at the next receive.
        let _ = self.conn.sender.send(msg);
    }

    fn run(&mut self) -> bool {
        loop {
            let msg = match self.queue.pop_front() {
                Some(msg) => msg,
                None => match self.next_due() {
                    Some(due) => {
                        let wait = due.saturating_duration_since(Instant::now());
                        match self.conn.receiver.recv_timeout(wait) {
                            Ok(msg) => msg,
                            Err(err) if err.is_timeout() => {
                                self.analyse_due();
                                continue;
                            }
                            Err(_) => return false,
                        }
                    }
                    None => match self.conn.receiver.recv() {
                        Ok(msg) => msg,
                        Err(_) => return false,
                    },
                },
            };
            match msg {
                Message::Request(req) => self.request(req),
                Message::Notification(n) => {
                    if n.method == "exit" {
                        return self.shut_down;
                    }
                    self.notification(n);
                }
                Message::Response(_) => {}
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.docs.values().filter_map(|d| d.due).min()
    }

    /// Analyses every document whose time has come.
    fn analyse_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .docs
            .iter()
            .filter(|(_, d)| d.due.is_some_and(|t| t <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.analyse(&key);
            // Messages that arrived meanwhile decide whether the result
            // is still current.
            while let Ok(msg) = self.conn.receiver.try_recv() {
                self.queue.push_back(msg);
            }
            let stale = self.queue.iter().any(|m| match m {
                Message::Notification(n) => {
                    matches!(
                        n.method.as_str(),
                        "textDocument/didChange" | "textDocument/didClose"
                    ) && n
                        .params
                        .pointer("/textDocument/uri")
                        .and_then(Value::as_str)
                        == Some(key.as_str())
                }
                _ => false,
            });
            if !stale {
                self.publish(&key);
            }
        }
    }

    /// Analyses one document's latest text now.
    fn analyse(&mut self, key: &str) {
        let open: BTreeMap<String, String> = self
            .docs
            .iter()
            .filter(|(k, _)| k.as_str() != key)
            .map(|(_, d)| (d.path.clone(), d.text.clone()))
            .collect();
        let Some(doc) = self.docs.get_mut(key) else {
            return;
        };
        doc.due = None;
        let (path, text, version) = (doc.path.clone(), doc.text.clone(), doc.version);
        let hook = self.options.panic_in_analysis;
        let run = catch_unwind(AssertUnwindSafe(|| {
            if hook {
                panic!("test hook: the analysis panics");
            }
            Analysis::run(&path, &text, version, &open)
        }));
        doc.analysis = Some(match run {
            Ok(an) => an,
            Err(payload) => Analysis::failed(
                &path,
                &text,
                version,
                Diagnostic::error(
                    "E9011",
                    format!(
                        "internal error while checking this file: {}",
                        panic_text(payload.as_ref())
                    ),
                ),
            ),
        });
    }

    fn publish(&self, key: &str) {
        let Some(doc) = self.docs.get(key) else {
            return;
        };
        let Some(an) = &doc.analysis else {
            return;
        };
        if an.version != doc.version {
            return;
        }
        let diagnostics = convert::diagnostics(
            &an.diagnostics(),
            &an.sources,
            an.file,
            &doc.uri,
            an.anchor(),
            self.encoding,
        );
        self.notify(
            "textDocument/publishDiagnostics",
            lsp::PublishDiagnosticsParams {
                uri: doc.uri.clone(),
                diagnostics,
                version: Some(doc.version),
            },
        );
    }

    fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(Message::Notification(Notification::new(
            method.to_owned(),
            params,
        )));
    }

    /// Brings a document's analysis up to date before answering about it.
    fn current(&mut self, uri: &lsp::Uri) -> Result<&Analysis, (ErrorCode, String)> {
        let key = uri.as_str().to_owned();
        let needs = match self.docs.get(&key) {
            None => {
                return Err((
                    ErrorCode::InvalidParams,
                    format!("`{key}` is not an open document"),
                ));
            }
            Some(d) => {
                d.due.is_some() || d.analysis.as_ref().is_none_or(|a| a.version != d.version)
            }
        };
        if needs {
            self.analyse(&key);
            self.publish(&key);
        }
        self.docs
            .get(&key)
            .and_then(|d| d.analysis.as_ref())
            .ok_or((ErrorCode::InternalError, "no analysis".to_owned()))
    }

    fn request(&mut self, req: Request) {
        let id: RequestId = req.id.clone();
        if self.shut_down {
            self.send(Message::Response(Response::new_err(
                id,
                ErrorCode::InvalidRequest as i32,
                "the server is shutting down".to_owned(),
            )));
            return;
        }
        if req.method == "shutdown" {
            self.shut_down = true;
            self.send(Message::Response(Response::new_ok(id, ())));
            return;
        }
        let reply = catch_unwind(AssertUnwindSafe(|| self.dispatch(req)));
        let response = match reply {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(payload) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                format!("internal error: {}", panic_text(payload.as_ref())),
            ),
        };
        self.send(Message::Response(response));
    }

    fn dispatch(&mut self, req: Request) -> Reply {
        if self.options.panic_method.as_deref() == Some(req.method.as_str()) {
            panic!("test hook: `{}` panics", req.method);
        }
        match req.method.as_str() {
            "textDocument/hover" => answer(req.params, |p| self.hover(p)),
            "textDocument/inlayHint" => answer(req.params, |p| self.inlay_hints(p)),
            "textDocument/definition" => answer(req.params, |p| self.definition(p)),
            "textDocument/documentSymbol" => answer(req.params, |p| self.symbols(p)),
            other => Err((
                ErrorCode::MethodNotFound,
                format!("nkic does not support `{other}`"),
            )),
        }
    }

    fn notification(&mut self, n: Notification) {
        let outcome = catch_unwind(AssertUnwindSafe(|| self.notification_inner(n)));
        if let Err(payload) = outcome {
            eprintln!(
                "nkic lsp: internal error in a notification: {}",
                panic_text(payload.as_ref())
            );
        }
    }

    fn notification_inner(&mut self, n: Notification) {
        let now = Instant::now();
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = params::<lsp::DidOpenTextDocumentParams>(n.params) else {
                    return;
                };
                let key = p.text_document.uri.as_str().to_owned();
                let path = convert::uri_to_path(&key).unwrap_or_else(|| key.clone());
                self.docs.insert(
                    key,
                    Doc {
                        uri: p.text_document.uri,
                        path,
                        text: p.text_document.text,
                        version: p.text_document.version,
                        due: Some(now),
                        analysis: None,
                    },
                );
                self.reschedule_others(now + self.options.debounce);
            }
            "textDocument/didChange" => {
                let Ok(p) = params::<lsp::DidChangeTextDocumentParams>(n.params) else {
                    return;
                };
                let encoding = self.encoding;
                let due = now + self.options.debounce;
                let Some(doc) = self.docs.get_mut(p.text_document.uri.as_str()) else {
                    return;
                };
                for change in p.content_changes {
                    apply_change(&mut doc.text, change, encoding);
                }
                doc.version = p.text_document.version;
                doc.due = Some(due);
                self.reschedule_others(due);
            }
            "textDocument/didSave" => {
                let Ok(p) = params::<lsp::DidSaveTextDocumentParams>(n.params) else {
                    return;
                };
                let due = now + self.options.debounce;
                if let Some(doc) = self.docs.get_mut(p.text_document.uri.as_str()) {
                    doc.due = Some(due);
                }
            }
            "textDocument/didClose" => {
                let Ok(p) = params::<lsp::DidCloseTextDocumentParams>(n.params) else {
                    return;
                };
                if self.docs.remove(p.text_document.uri.as_str()).is_some() {
                    self.notify(
                        "textDocument/publishDiagnostics",
                        lsp::PublishDiagnosticsParams {
                            uri: p.text_document.uri,
                            diagnostics: Vec::new(),
                            version: None,
                        },
                    );
                }
                self.reschedule_others(now + self.options.debounce);
            }
            "workspace/didChangeConfiguration" => {
                if let Some(settings) = n.params.get("settings") {
                    read_settings(settings, &mut self.inlay_hints);
                }
            }
            // `initialized`, `$/cancelRequest`, `$/setTrace` and anything
            // unknown need no action.
            _ => {}
        }
    }

    /// Schedules every document without a pending analysis for `due`.
    fn reschedule_others(&mut self, due: Instant) {
        for doc in self.docs.values_mut() {
            if doc.due.is_none() {
                doc.due = Some(due);
            }
        }
    }

    fn hover(&mut self, p: &lsp::HoverParams) -> Result<Option<lsp::Hover>, (ErrorCode, String)> {
        let enc = self.encoding;
        let an = self.current(&p.text_document_position_params.text_document.uri)?;
        let file = an.sources.file(an.file);
        let offset = convert::offset(file, p.text_document_position_params.position, enc);
        Ok(hover::hover(an, offset).map(|(span, text)| lsp::Hover {
            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: text,
            }),
            range: Some(convert::range(file, span, enc)),
        }))
    }

    fn inlay_hints(
        &mut self,
        p: &lsp::InlayHintParams,
    ) -> Result<Vec<lsp::InlayHint>, (ErrorCode, String)> {
        if !self.inlay_hints {
            return Ok(Vec::new());
        }
        let enc = self.encoding;
        let an = self.current(&p.text_document.uri)?;
        let file = an.sources.file(an.file);
        let range = Span::new(
            convert::offset(file, p.range.start, enc),
            convert::offset(file, p.range.end, enc),
        );
        Ok(hover::inlay_hints(an, range)
            .into_iter()
            .map(|h| lsp::InlayHint {
                position: convert::position(file, h.offset, enc),
                label: lsp::InlayHintLabel::String(h.label),
                kind: Some(lsp::InlayHintKind::TYPE),
                text_edits: None,
                tooltip: Some(lsp::InlayHintTooltip::String(h.tooltip)),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            })
            .collect())
    }

    fn definition(
        &mut self,
        p: &lsp::GotoDefinitionParams,
    ) -> Result<Option<lsp::GotoDefinitionResponse>, (ErrorCode, String)> {
        let enc = self.encoding;
        let uri = p.text_document_position_params.text_document.uri.clone();
        let open: BTreeMap<String, String> = self
            .docs
            .values()
            .map(|d| (d.path.clone(), d.text.clone()))
            .collect();
        let an = self.current(&uri)?;
        let file = an.sources.file(an.file);
        let offset = convert::offset(file, p.text_document_position_params.position, enc);
        let location = match syntax::definition(&an.module, offset) {
            None => None,
            Some(Definition::Here(span)) => Some(lsp::Location::new(
                uri.clone(),
                convert::range(file, span, enc),
            )),
            Some(Definition::Module {
                module,
                level,
                name,
            }) => {
                let dir = file.name().rfind('/').map_or("", |i| &file.name()[..i]);
                cross_file(dir, module.as_deref(), level, name.as_deref(), &open, enc)
            }
        };
        Ok(location.map(lsp::GotoDefinitionResponse::Scalar))
    }

    fn symbols(
        &mut self,
        p: &lsp::DocumentSymbolParams,
    ) -> Result<lsp::DocumentSymbolResponse, (ErrorCode, String)> {
        let enc = self.encoding;
        let an = self.current(&p.text_document.uri)?;
        let file = an.sources.file(an.file);
        Ok(lsp::DocumentSymbolResponse::Nested(symbols_of(
            &an.module.body,
            file,
            enc,
            true,
        )))
    }
}

/// Finds `name` (or the module itself) in an imported sibling module.
fn cross_file(
    dir: &str,
    module: Option<&str>,
    level: u32,
    name: Option<&str>,
    open: &BTreeMap<String, String>,
    enc: Encoding,
) -> Option<lsp::Location> {
    let loader = crate::files::DiskLoader { open };
    let read = |path: &str| nkic_specialize::ModuleLoader::read(&loader, path);
    let try_module = |path: &str, name: Option<&str>| -> Option<lsp::Location> {
        let text = read(path)?;
        let mut map = nkic_diag::SourceMap::new();
        let id = map.add(path, text);
        let (parsed, _) = nkic_syntax::parse(map.file(id).text());
        let span = match name {
            Some(n) => syntax::top_level(&parsed, n)?.name_span,
            None => Span::empty(0),
        };
        let uri = convert::to_uri(&convert::path_to_uri(path))?;
        Some(lsp::Location::new(
            uri,
            convert::range(map.file(id), span, enc),
        ))
    };
    for path in syntax::module_paths(dir, module, level) {
        if let Some(loc) = try_module(&path, name) {
            return Some(loc);
        }
    }
    // `from . import util`: the name is itself a module.
    let sub = match (module, name) {
        (Some(m), Some(n)) => Some(format!("{m}.{n}")),
        (None, Some(n)) => Some(n.to_owned()),
        _ => None,
    }?;
    syntax::module_paths(dir, Some(&sub), level)
        .iter()
        .find_map(|path| try_module(path, None))
}

/// The document symbols of a block: functions (kernels marked), classes
/// with their members, and variables (the first binding of each name).
#[allow(deprecated)]
fn symbols_of(
    stmts: &[nkic_syntax::ast::Stmt],
    file: &nkic_diag::SourceFile,
    enc: Encoding,
    top: bool,
) -> Vec<lsp::DocumentSymbol> {
    let mut out: Vec<lsp::DocumentSymbol> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for b in syntax::scope_bindings(stmts) {
        let (kind, detail) = match &b.kind {
            syntax::BindingKind::Function { is_kernel: true } => {
                (lsp::SymbolKind::FUNCTION, Some("NKI kernel".to_owned()))
            }
            syntax::BindingKind::Function { .. } if !top => (lsp::SymbolKind::METHOD, None),
            syntax::BindingKind::Function { .. } => (lsp::SymbolKind::FUNCTION, None),
            syntax::BindingKind::Class => (lsp::SymbolKind::CLASS, None),
            syntax::BindingKind::Variable
                if b.name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) =>
            {
                (lsp::SymbolKind::CONSTANT, None)
            }
            syntax::BindingKind::Variable => (lsp::SymbolKind::VARIABLE, None),
            syntax::BindingKind::Parameter | syntax::BindingKind::Import { .. } => continue,
        };
        if matches!(b.kind, syntax::BindingKind::Variable) && !seen.insert(b.name.clone()) {
            continue;
        }
        let children = b.body.map(|body| symbols_of(body, file, enc, false));
        out.push(lsp::DocumentSymbol {
            name: b.name.clone(),
            detail,
            kind,
            tags: None,
            deprecated: None,
            range: convert::range(file, b.span, enc),
            selection_range: convert::range(file, b.name_span, enc),
            children: children.filter(|c| !c.is_empty()),
        });
    }
    out
}

/// Applies one content change (a range edit, or the whole text).
fn apply_change(text: &mut String, change: lsp::TextDocumentContentChangeEvent, enc: Encoding) {
    let Some(range) = change.range else {
        *text = change.text;
        return;
    };
    let mut map = nkic_diag::SourceMap::new();
    let id = map.add("", std::mem::take(text));
    let file = map.file(id);
    let start = convert::offset(file, range.start, enc) as usize;
    let end = (convert::offset(file, range.end, enc) as usize).max(start);
    let mut new = String::with_capacity(file.text().len() + change.text.len());
    new.push_str(&file.text()[..start]);
    new.push_str(&change.text);
    new.push_str(&file.text()[end..]);
    *text = new;
}
