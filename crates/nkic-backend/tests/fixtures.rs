//! The fixture corpus: every `tests/fixtures/*.ir` kernel is compiled both
//! ways. Kernels named `err_*` must fail with the snapshotted diagnostics
//! (compiled with spilling off);
//! every other kernel must verify, round-trip through the `.nkasm` text,
//! match its snapshot, and produce the same output bytes in the simulator
//! (with the race sanitizer on) under the optimized and the sequential
//! schedule, never faster than the engine part of the lower bound (the simulator
//! does not model HBM bandwidth). `check_grid` (`nkic check`) reports
//! exactly what compiling does for each of them.

mod common;

use nkic_backend::{BackendConfig, Schedule, check_grid, compile_grid_with_warnings, lower_bound};
use nkic_isa::Program;

fn build(name: &str, schedule: Schedule) -> Result<Program, String> {
    let (kernel, sources) = common::load(name);
    // The `err_*` overflow fixtures pin E0901/E0902, which spilling would
    // avoid (`spill_*` fixtures are the same kernels, spilled).
    let config = BackendConfig {
        schedule,
        no_spill: name.starts_with("err_"),
    };
    let kernels = std::slice::from_ref(&kernel);
    let compiled = compile_grid_with_warnings(kernels, &sources, &config);
    let checked = check_grid(kernels, &sources, &config);
    match (&compiled, &checked) {
        (Ok((_, warnings)), Ok(checked)) => assert_eq!(checked, warnings, "{name}"),
        (Err(errors), Err(checked)) => assert_eq!(checked, errors, "{name}"),
        _ => panic!("{name}: check_grid disagrees: {checked:?}"),
    }
    compiled
        .map(|(program, _)| program)
        .map_err(|diags| common::render(&diags, &sources))
}

#[test]
fn every_fixture() {
    let mut report = String::new();
    for name in common::fixture_names() {
        if name.starts_with("err_") {
            let Err(text) = build(&name, Schedule::Optimized) else {
                panic!("{name} should not compile");
            };
            insta::assert_snapshot!(format!("{name}.diag"), text);
            continue;
        }
        let opt = build(&name, Schedule::Optimized).unwrap_or_else(|e| panic!("{name}:\n{e}"));
        let seq = build(&name, Schedule::Sequential).unwrap_or_else(|e| panic!("{name}:\n{e}"));
        let text = opt.to_string();
        let back = nkic_isa::assemble(&text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        // The text form does not carry the operand names.
        let mut plain = opt.clone();
        plain.operand_names.clear();
        assert_eq!(back, plain, "{name}: the .nkasm text round-trips");
        if !name.ends_with("_large") {
            insta::assert_snapshot!(format!("{name}.nkasm"), text);
        }
        let inputs = common::inputs(&opt, 7);
        let a = common::simulate(&opt, &inputs);
        let b = common::simulate(&seq, &inputs);
        assert_eq!(
            a.outputs, b.outputs,
            "{name}: optimized and sequential outputs differ"
        );
        let bound = lower_bound(&opt);
        let (t_opt, t_seq) = (a.total_ns(), b.total_ns());
        assert!(
            t_opt + 1e-6 >= bound.engine_ns,
            "{name}: {t_opt} ns beats the engine bound {} ns",
            bound.engine_ns
        );
        report.push_str(&format!(
            "{name:28} optimized {t_opt:>10.1} ns  sequential {t_seq:>10.1} ns  bound {:>10.1} ns ({})  opt/bound {:.2}  opt/engine bound {:.2}  seq/opt {:.2}\n",
            bound.ns,
            bound.limited_by,
            t_opt / bound.ns,
            t_opt / bound.engine_ns,
            t_seq / t_opt
        ));
    }
    println!("{report}");
}
