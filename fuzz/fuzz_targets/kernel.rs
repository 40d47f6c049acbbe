//! Fuzzes the whole front half on kernel source: any text, specialized with
//! its `# nkic:` directives under a small evaluation budget, must end with
//! diagnostics (never a panic, a hang or an allocation failure), and every
//! diagnostic must carry a location.
//!
//! Run with `cargo +nightly fuzz run kernel` from `fuzz/`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig};

fuzz_target!(|data: &[u8]| {
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
        assert!(d.primary.is_some() || d.code == "I0001", "unlocated: {d:?}");
    }
});
