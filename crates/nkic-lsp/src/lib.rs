//! The nkic language server (`nkic lsp`): the only crate that knows the
//! Language Server Protocol and JSON-RPC.
//!
//! It serves, over stdio (or any [`lsp_server::Connection`]):
//!
//! * diagnostics as you type, from the same front-half function as the
//!   command line ([`nkic_driver::front_half`]), debounced, latest text
//!   wins, never published for a text that has changed since;
//! * hover: what the specializer knew about the expression (tensor shape,
//!   dtype and buffer, compile-time values, how many evaluations an
//!   unrolled loop folded together) and, for `nl.*`/`nisa.*` functions,
//!   the signature, engines and constraints from the API table;
//! * inlay hints with the shape, dtype and buffer of tensors created by
//!   assignments (on by default; `nkic.inlayHints = false` turns them off);
//! * go to definition (across files for imports of sibling modules) and
//!   document symbols, from the syntax tree.
//!
//! # Code map
//!
//! * [`server`]: the main loop, document state, debouncing, dispatch and
//!   panic isolation.
//! * [`convert`]: position encodings (UTF-16 by default, UTF-8 when the
//!   client offers it), file URIs, and `Diagnostic` → LSP diagnostics.
//! * [`analysis`]: one run of the front half over a document snapshot.
//! * [`syntax`]: syntax-tree queries: the expression under the cursor,
//!   enclosing loops, bindings, symbols and definitions.
//! * [`hover`]: hover text and inlay hints.
//! * [`transport`]: `Content-Length` framing on stdio; bodies that are not
//!   JSON-RPC messages get error replies instead of ending the server.
//!
//! # Invariants
//!
//! * The server never exits on a malformed document or an unsupported
//!   request: unknown requests get `MethodNotFound`, bad parameters
//!   `InvalidParams`, a panic inside a handler `InternalError`.
//! * Diagnostics are published only for the latest text of a document.
//! * Files are read only here (open documents win over the disk).

pub mod analysis;
pub mod convert;
pub mod files;
pub mod hover;
pub mod server;
pub mod syntax;
pub mod transport;

pub use server::{Options, serve};

/// Runs the server on standard input and output until the client sends
/// `exit`. Returns whether the exit was clean (a `shutdown` came first),
/// which decides the process's exit code (0 or 1) per the protocol.
pub fn run_stdio() -> Result<bool, String> {
    let (connection, io_threads) = transport::stdio();
    let clean = serve(connection, &Options::default())?;
    io_threads
        .join()
        .map_err(|err| format!("language server IO failed: {err}"))?;
    Ok(clean)
}
