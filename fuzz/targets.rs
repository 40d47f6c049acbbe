//! The bodies of the fuzz targets, one function per input surface, as plain
//! Rust without libFuzzer: each `fuzz_targets/<name>.rs` calls its function
//! here, and `crates/nkic/tests/fuzz_seeds.rs` (a workspace test, run by CI)
//! calls every one on a few seed inputs, so the targets compile and hold on
//! stable Rust even where cargo-fuzz is not installed.
//!
//! Every function panics when an invariant is broken; the fuzzer treats a
//! panic, a timeout or an allocation over its limit as a finding.

use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig};

/// The `.npy` reader lives in the `nkic` binary crate, so its module is
/// compiled in here.
#[allow(dead_code)]
#[path = "../crates/nkic/src/npy.rs"]
mod npy;

/// Kernel source through lexer, layout and parser only: no panic, token
/// and AST invariants hold, a clean parse survives the unparse round trip.
pub fn parse(data: &[u8]) {
    let src = String::from_utf8_lossy(data);
    let (tokens, _) = nkic_syntax::lex(&src);
    if let Err(msg) = nkic_syntax::layout::check_tokens(&src, &tokens) {
        panic!("layout invariant broken: {msg}");
    }
    let (module, diags) = nkic_syntax::parse(&src);
    if let Err(msg) = nkic_syntax::check_structure(&module) {
        panic!("AST structure broken: {msg}");
    }
    let _ = nkic_syntax::dump_ast(&module);
    let printed = nkic_syntax::unparse(&module);
    let (again, _) = nkic_syntax::parse(&printed);
    if diags.is_empty() {
        assert!(
            again.without_spans() == module.without_spans(),
            "unparse round trip differs:\n{printed}"
        );
    }
}

/// Kernel source through the whole front half (directives included) under
/// a small evaluation budget: diagnostics, never a panic, a hang or an
/// allocation failure, and every diagnostic located.
pub fn kernel(data: &[u8]) {
    let src = String::from_utf8_lossy(data);
    let mut sources = SourceMap::new();
    let file = sources.add("kernel.py", src.as_ref());
    let config = SpecializeConfig {
        args: vec!["a=float32[128,64]".parse().expect("a valid spec")],
        max_steps: 100_000,
        max_value_bytes: 1 << 20,
        max_ops: 10_000,
        ..SpecializeConfig::default()
    };
    let out = nkic_driver::front_half(&mut sources, file, &config, &NoModules);
    for d in &out.diagnostics {
        assert!(d.primary.is_some(), "unlocated: {d:?}");
    }
}

/// `.npy` bytes: read or refused in time linear in their length, without
/// a panic and without allocating more than the file's size suggests.
pub fn npy(data: &[u8]) {
    let _ = npy::peek(data);
    for dtype in [
        nkic_isa::DType::F32,
        nkic_isa::DType::BF16,
        nkic_isa::DType::I8,
        nkic_isa::DType::U32,
    ] {
        let _ = npy::convert(data, dtype);
    }
}

/// `.nkasm` text: assembled or refused with errors inside the text, and an
/// assembled launch verified or refused, without a panic.
pub fn nkasm(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match nkic_isa::launch::assemble_launch(&text) {
        Ok(launch) => {
            let _ = nkic_isa::launch::verify_launch(&launch);
        }
        Err(errors) => {
            for e in &errors {
                assert!(
                    e.span.end as usize <= text.len(),
                    "error outside the text: {e:?}"
                );
            }
        }
    }
}

/// The language server's stdin byte stream: split into frames (or
/// refused) without a panic and without allocating what a
/// `Content-Length` claims before the bytes arrive.
pub fn lsp_frames(data: &[u8]) {
    use nkic_lsp::transport::{Frame, decode, read_frame};
    let mut input = std::io::Cursor::new(data);
    while let Ok(Some(frame)) = read_frame(&mut input) {
        if let Frame::Body(body) = frame {
            let _ = decode(&body);
        }
    }
}

/// `nkic.toml` text: an entry, no entry, or located diagnostics, without a
/// panic.
pub fn manifest(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut sources = SourceMap::new();
    if let Err(diags) = nkic_driver::manifest::entry_for("k.py", "nkic.toml", &text, &mut sources) {
        for d in &diags {
            assert!(d.primary.is_some(), "unlocated: {d:?}");
        }
    }
}
