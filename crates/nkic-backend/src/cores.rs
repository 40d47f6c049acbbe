//! Multi-core launches: an SPMD grid on the two physical cores of an LNC=2
//! logical core, as one `nkic_isa::Launch`.
//!
//! # What a grid runs on
//!
//! * A grid of exactly two instances (`kernel[2]`, `--grid 2`) on trn2 or
//!   trn3 is an LNC=2 launch (language.md §3.2: `kernel[n]` sets LNC = n,
//!   and both targets have LNC=2): instance `i` runs on physical core `i`.
//! * Every other grid (one instance, `[4]`, `[2, 2]`, …) runs its
//!   instances one after another on one core, as [`compile_grid`]
//!   documents (the legacy SPMD semantics).
//! * [`launch_cores`] takes an explicit LNC (`nkic --lnc 1|2`): LNC=1 keeps
//!   a grid of two on one core; LNC=2 with an even number of instances
//!   runs the first half on core 0 and the second half on core 1, each
//!   half serially like a one-core grid.
//!
//! # What is shared
//!
//! Each core's instances are compiled on their own with [`compile_grid`],
//! so SBUF, PSUM, engines, DMA queues, semaphores and internal HBM
//! buffers (`nl.hbm`/`private_hbm`, spills) are per core, as the language
//! specifies for per-instance buffers. The kernel's arguments and returned
//! tensors (`shared_hbm`) are the launch's shared HBM tensors: argument
//! `j` of every core is the same tensor. An internal `nl.shared_hbm`
//! tensor is a `shared` `.hbm` tensor of every core, named alike on both
//! (both compile the same kernel), so the cores see one tensor: a
//! hand-off through a scratch (store, `core_barrier`, load) works. The cores are ordered against
//! each other only by `core_barrier`s (and `sendrecv`s): instances that
//! write and read the same bytes of a shared tensor without one race,
//! which the simulator reports.
//!
//! # Barriers
//!
//! A `core_barrier` waits until both cores reach their barrier of the same
//! rank on the same queue. Before compiling, [`compile_launch`] checks that
//! every core executes the same barriers in the same order on the same
//! engines (E0914, at the first barrier where the cores part, naming the
//! instances each core runs), so a barrier under an `if` on
//! `nl.program_id` is a diagnostic at its call rather than a launch that
//! hangs or fails the ISA verifier.
//!
//! [`compile_grid`]: crate::compile_grid

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{Kernel, OpKind, SrcLoc};
use nkic_isa::{Engine, Launch};

use crate::{BackendConfig, codes, collect, compile_grid_with_warnings};

/// The number of physical cores a grid runs on: the rule lives in
/// `nkic-isa`, which the specializer also asks (a collective into shared
/// HBM knows whether the other instance runs on the other core).
pub use nkic_isa::launch::launch_cores;

/// Compiles the instances of a grid for `cores` physical cores: core `c`
/// gets instances `c·n/cores .. (c+1)·n/cores` (compiled with
/// [`compile_grid`]). One core is exactly `compile_grid` of every instance.
pub fn compile_launch(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
    cores: usize,
) -> Result<Launch, Vec<Diagnostic>> {
    compile_launch_with_warnings(kernels, sources, config, cores).map(|(launch, _)| launch)
}

/// The stack of a thread that compiles one core's program: the backend's
/// recursions follow the nesting of dynamic loops, which the front end
/// bounds (`E0021`), far below this. Only the pages used are committed.
const CORE_STACK_BYTES: usize = 64 << 20;

/// One core's program and warnings, or its errors.
type CoreResult = Result<(nkic_isa::Program, Vec<Diagnostic>), Vec<Diagnostic>>;

/// Compiles each core's instances (`parts`) with `compile` ([`compile_grid`]
/// or its checks), the cores after the first on threads of their own: the
/// programs are independent, so they are compiled side by side and
/// returned in core order, the same as one after another. A core whose
/// thread cannot be started is compiled on this thread.
///
/// [`compile_grid`]: crate::compile_grid
fn compile_parts(
    parts: &[&[Kernel]],
    compile: &(dyn Fn(&[Kernel]) -> CoreResult + Sync),
) -> Vec<CoreResult> {
    let Some((&first, rest)) = parts.split_first() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let spawned: Vec<_> = rest
            .iter()
            .map(|&part| {
                let handle = std::thread::Builder::new()
                    .name("nkic-core".to_owned())
                    .stack_size(CORE_STACK_BYTES)
                    .spawn_scoped(scope, move || compile(part));
                (part, handle)
            })
            .collect();
        let mut out = vec![compile(first)];
        for (part, handle) in spawned {
            out.push(match handle {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => compile(part),
            });
        }
        out
    })
}

/// What [`compile_launch_with_warnings`] reports, without the launch: its
/// errors, or its warnings where it compiles. Each core is checked with
/// [`crate::check_grid`]; the rules across cores that a kernel can break
/// concern the cores' HBM tensors only (arguments and `shared` tensors),
/// which the checks give without emitting the programs.
pub fn check_launch(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
    cores: usize,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    if cores <= 1 || kernels.len() < cores {
        return crate::check_grid(kernels, sources, config);
    }
    let checked = |part: &[Kernel]| -> CoreResult {
        let (hbm, warnings) = crate::checked_grid(part, sources, config)?;
        let target = part.first().map_or(nkic_isa::Target::Trn3, |k| k.target);
        let mut program = nkic_isa::Program::new(target);
        program.hbm = hbm;
        Ok((program, warnings))
    };
    launch_parts(kernels, sources, cores, &checked).map(|(_, warnings)| warnings)
}

/// [`compile_launch`], with the compile's warnings (E0906 for spills,
/// each kept once).
pub fn compile_launch_with_warnings(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
    cores: usize,
) -> Result<(Launch, Vec<Diagnostic>), Vec<Diagnostic>> {
    if cores <= 1 || kernels.len() < cores {
        return compile_grid_with_warnings(kernels, sources, config)
            .map(|(program, warnings)| (Launch::single(program), warnings));
    }
    let compile = |part: &[Kernel]| compile_grid_with_warnings(part, sources, config);
    launch_parts(kernels, sources, cores, &compile)
}

/// [`compile_launch_with_warnings`] on `cores` cores (two or more, with at
/// least as many instances), each core's instances compiled by `compile`:
/// the checks across cores, the cores' results, the launch's rules.
fn launch_parts(
    kernels: &[Kernel],
    sources: &SourceMap,
    cores: usize,
    compile: &(dyn Fn(&[Kernel]) -> CoreResult + Sync),
) -> Result<(Launch, Vec<Diagnostic>), Vec<Diagnostic>> {
    let n = kernels.len();
    let parts: Vec<&[Kernel]> = (0..cores)
        .map(|c| &kernels[c * n / cores..(c + 1) * n / cores])
        .collect();
    let mut mismatched: Vec<Diagnostic> = kernels
        .iter()
        .enumerate()
        .skip(1)
        .flat_map(|(inst, k)| collect::argument_mismatches(inst, k, &kernels[0]))
        .collect();
    mismatched.extend(shared_mismatches(&parts));
    if mismatched.is_empty() {
        mismatched = barrier_mismatches(&parts, sources);
    }
    if !mismatched.is_empty() {
        return Err(mismatched);
    }
    let mut programs = Vec::with_capacity(cores);
    let mut errors = Vec::new();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    for compiled in compile_parts(&parts, compile) {
        match compiled {
            Ok((p, w)) => {
                programs.push(p);
                for d in w {
                    if !warnings.contains(&d) {
                        warnings.push(d);
                    }
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        // The cores usually compile the same code: keep each message once.
        let mut seen = Vec::new();
        errors.retain(|d| {
            let key = format!("{d:?}");
            let new = !seen.contains(&key);
            seen.push(key);
            new
        });
        return Err(errors);
    }
    let launch = Launch { cores: programs };
    // Each core's program was verified as it was emitted
    // (`emit::verified`); what is left are the rules across cores.
    if let Err(problems) = nkic_isa::verify_launch_rules(&launch) {
        // The checks above report what the kernel can get wrong across
        // cores at its source lines; these two rules are the kernel's
        // fault too, should a case slip past them.
        let mut errors = Vec::new();
        for e in problems {
            let code = match e.rule {
                nkic_isa::Rule::LaunchArguments => codes::GRID_MISMATCH,
                nkic_isa::Rule::LaunchShared | nkic_isa::Rule::LaunchSharedData => {
                    codes::SHARED_MISMATCH
                }
                _ => panic!(
                    "invariant broken: the cores of a launch are verified programs with the same target and barriers, but the launch fails the ISA verifier: {e}"
                ),
            };
            errors.push(Diagnostic::error(
                code,
                format!("the two-core launch does not verify: {e}"),
            ));
        }
        return Err(errors);
    }
    Ok((launch, warnings))
}

/// E0915 for each `nl.shared_hbm` tensor the instances of one core
/// allocate and those of the other do not (the cores of a launch share
/// these tensors, so both must declare the same ones), at its allocation.
/// Allocations are the same when they have the same name, dtype, shape
/// and source location. (Shared constants, `Storage::data`, are private
/// per instance, so no shared tensor has bytes of its own; should one, the
/// ISA verifier's `LaunchSharedData` rule makes it E0915 below.)
fn shared_mismatches<'k>(parts: &[&'k [Kernel]]) -> Vec<Diagnostic> {
    type Site<'k> = (&'k str, nkic_isa::DType, &'k [u64], Option<SrcLoc>);
    let sites = |part: &'k [Kernel]| -> Vec<Site<'k>> {
        let mut sites = Vec::new();
        for k in part {
            let used = nkic_ir::live_ranges(k);
            for h in collect::shared_internal(k) {
                if used.get(h).is_none() {
                    continue;
                }
                let st = &k.storages[h];
                let site = (
                    st.name.as_str(),
                    st.dtype,
                    st.shape.as_slice(),
                    k.spans.storages.get(h).copied(),
                );
                if !sites.contains(&site) {
                    sites.push(site);
                }
            }
        }
        sites
    };
    let per_core: Vec<Vec<Site<'k>>> = parts.iter().map(|part| sites(part)).collect();
    let mut out = Vec::new();
    for (c, mine) in per_core.iter().enumerate() {
        let other = 1 - c.min(1);
        for &(name, _, _, loc) in mine {
            if per_core[other].iter().any(|s| s.0 == name && s.3 == loc) {
                continue;
            }
            let d = collect::diag_at(
                codes::SHARED_MISMATCH,
                if name.is_empty() {
                    format!("only core {c} allocates this `nl.shared_hbm` tensor")
                } else {
                    format!("only core {c} allocates the `nl.shared_hbm` tensor `{name}`")
                },
                loc,
                format!("core {other} never allocates this tensor"),
            )
            .with_note("the two cores of an LNC=2 launch share their `nl.shared_hbm` tensors, so both must allocate the same ones")
            .with_help("allocate it outside any `if` on `nl.program_id`, or in `nl.private_hbm`");
            out.push(d);
        }
    }
    out
}

/// One `core_barrier` a core executes: its instance's kernel, the op, the
/// engine the kernel chose and the location.
struct Barrier<'k> {
    kernel: &'k Kernel,
    handle: nkic_ir::Handle<nkic_ir::Op>,
    engine: Option<Engine>,
    loc: Option<SrcLoc>,
}

/// The `core_barrier`s of one core's instances in the order the core runs
/// them (instance after instance, each in program order).
fn barriers<'k>(part: &'k [Kernel]) -> Vec<Barrier<'k>> {
    let mut out = Vec::new();
    for k in part {
        for h in k.ops_in_order() {
            let op = &k.ops[h];
            if matches!(op.kind, OpKind::CoreBarrier { .. }) {
                out.push(Barrier {
                    kernel: k,
                    handle: h,
                    engine: op.engine,
                    loc: k.spans.ops.get(h).copied(),
                });
            }
        }
    }
    out
}

/// `nl.program_id` of an instance as the author writes it: `1`, `(0, 1)`.
fn instance_id(k: &Kernel) -> String {
    let ids: Vec<String> = k.program_id.iter().map(u32::to_string).collect();
    if ids.len() == 1 {
        ids.join("")
    } else {
        format!("({})", ids.join(", "))
    }
}

/// Checks that every core of a launch executes the same `core_barrier`s
/// in the same order, on the same engine (language.md §3.2): a barrier
/// waits until both cores reach their barrier of the same rank, so a
/// barrier only one core executes (typically under an `if` on
/// `nl.program_id`) would wait forever, and two barriers of different
/// engines pair up wrongly. One [`codes::BARRIER_MISMATCH`] per core that
/// differs from core 0, at the first barrier where they part. A barrier
/// inside a dynamic loop counts once here, as in the machine program; its
/// trip count is the kernel's business.
fn barrier_mismatches(parts: &[&[Kernel]], sources: &SourceMap) -> Vec<Diagnostic> {
    let Some((first, rest)) = parts.split_first() else {
        return Vec::new();
    };
    let main = barriers(first);
    let mut diags = Vec::new();
    for (c, part) in rest.iter().enumerate().map(|(i, p)| (i + 1, p)) {
        let mine = barriers(part);
        let split = main
            .iter()
            .zip(&mine)
            .position(|(a, b)| a.engine != b.engine)
            .or_else(|| (main.len() != mine.len()).then(|| main.len().min(mine.len())));
        let Some(rank) = split else {
            continue;
        };
        let count = |n: usize| match n {
            0 => "none".to_owned(),
            1 => "1 `core_barrier`".to_owned(),
            n => format!("{n} `core_barrier`s"),
        };
        let runs = |core: usize, part: &[Kernel]| {
            let ids: Vec<String> = part.iter().map(instance_id).collect();
            if ids.len() == 1 {
                format!("core {core} runs instance {}", ids.join(""))
            } else {
                format!("core {core} runs instances {}", ids.join(", "))
            }
        };
        let engine = |b: &Barrier<'_>| {
            b.engine
                .map_or("an engine of the compiler's choice", |e| e.name())
        };
        let (message, primary, label, other) = match (main.get(rank), mine.get(rank)) {
            (Some(a), Some(b)) => (
                format!(
                    "the cores of the LNC=2 launch execute `core_barrier`s on different engines: barrier {} of core 0 runs on {}, core {c}'s on {}",
                    rank + 1,
                    engine(a),
                    engine(b)
                ),
                a,
                format!("core 0's barrier {} (on {})", rank + 1, engine(a)),
                Some((
                    b,
                    format!("core {c}'s barrier {} (on {})", rank + 1, engine(b)),
                )),
            ),
            (Some(a), None) => (
                format!(
                    "only core 0 executes this `core_barrier`: core 0 executes {}, core {c} {}",
                    count(main.len()),
                    count(mine.len())
                ),
                a,
                format!("core {c} never reaches this barrier"),
                None,
            ),
            (None, Some(b)) => (
                format!(
                    "only core {c} executes this `core_barrier`: core 0 executes {}, core {c} {}",
                    count(main.len()),
                    count(mine.len())
                ),
                b,
                "core 0 never reaches this barrier".to_owned(),
                None,
            ),
            (None, None) => continue,
        };
        let mut d = crate::collect::diag_at(codes::BARRIER_MISMATCH, message, primary.loc, label);
        if let Some((b, text)) = other
            && let Some(loc) = b.loc
        {
            d = d.with_secondary(loc.file, loc.span, text);
        }
        for note in primary.kernel.op_notes(primary.handle, Some(sources)) {
            d = d.with_note(note);
        }
        diags.push(
            d.with_note(format!(
                "{} and {}; a `core_barrier` waits until both cores reach it, so both cores must execute the same barriers in the same order (language.md §3.2), or the launch hangs",
                runs(0, first),
                runs(c, part)
            ))
            .with_help(
                "execute the barrier on every core, e.g. outside a condition on `nl.program_id`",
            ),
        );
    }
    diags
}

/// The capacity diagnostics of a launch without compiling it: SBUF
/// (E0901) and PSUM (E0902) overflows and the other errors of collecting
/// and allocating each core's instances (core `c` gets the instances
/// [`compile_launch`] gives it), or the spill warnings (E0906) when
/// spilling (unless `config.no_spill`) makes them fit, so `nkic check`
/// says what `run` would about on-chip memory. The allocator and the
/// spiller decide, exactly as in [`compile_launch`]; lowering, scheduling
/// and the simulator do not run. Each message is kept once (the cores
/// usually run the same code).
pub fn check_capacity(
    kernels: &[Kernel],
    sources: &SourceMap,
    cores: usize,
    config: &BackendConfig,
) -> Vec<Diagnostic> {
    let n = kernels.len();
    let cores = if cores <= 1 || n < cores { 1 } else { cores };
    let mut out: Vec<Diagnostic> = Vec::new();
    for c in 0..cores {
        let part = &kernels[c * n / cores..(c + 1) * n / cores];
        let diags = match crate::spill::fit(part, sources, config.no_spill) {
            Ok((_, warnings)) => warnings,
            Err(e) => e,
        };
        for d in diags {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_isa::Target;

    #[test]
    fn a_grid_of_two_is_lnc2_unless_asked_otherwise() {
        for target in [Target::Trn2, Target::Trn3] {
            assert_eq!(launch_cores(target, &[2], 2, None), Ok(2));
            assert_eq!(launch_cores(target, &[2], 2, Some(1)), Ok(1));
            assert_eq!(launch_cores(target, &[4], 4, None), Ok(1));
            assert_eq!(launch_cores(target, &[2, 2], 4, None), Ok(1));
            assert_eq!(launch_cores(target, &[], 1, None), Ok(1));
            assert_eq!(launch_cores(target, &[4], 4, Some(2)), Ok(2));
        }
        let odd = launch_cores(Target::Trn3, &[3], 3, Some(2));
        assert_eq!(
            odd,
            Err(
                "LNC=2 splits the grid's instances over two cores, but the grid has 3 instances"
                    .to_owned()
            )
        );
        assert!(launch_cores(Target::Trn3, &[], 1, Some(2)).is_err());
        assert_eq!(
            launch_cores(Target::Trn3, &[2], 2, Some(4)),
            Err("LNC is 1 or 2, not 4".to_owned())
        );
    }
}
