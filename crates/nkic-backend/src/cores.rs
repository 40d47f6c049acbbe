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
//! `j` of every core is the same tensor. The cores are not ordered against
//! each other (the IR has no cross-core barrier yet), so instances that
//! write and read the same bytes of a shared tensor race, which the
//! simulator reports.
//!
//! [`compile_grid`]: crate::compile_grid

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::Kernel;
use nkic_isa::{Launch, Target};

use crate::{BackendConfig, codes, compile_grid};

/// The number of physical cores a grid of `instances` instances with grid
/// shape `grid` runs on (module doc); `lnc` is an explicit request.
///
/// Errors (a message for the caller's diagnostic) when `lnc` is neither 1
/// nor 2, or is 2 for a target without LNC=2 or for an odd number of
/// instances.
pub fn launch_cores(
    target: Target,
    grid: &[u32],
    instances: usize,
    lnc: Option<u32>,
) -> Result<usize, String> {
    let max = target.figures().max_lnc as usize;
    match lnc {
        None => Ok(if grid == [2] && instances == 2 && max >= 2 {
            2
        } else {
            1
        }),
        Some(1) => Ok(1),
        Some(2) if max < 2 => Err(format!("{target} has no LNC=2")),
        Some(2) if instances < 2 || !instances.is_multiple_of(2) => Err(format!(
            "LNC=2 splits the grid's instances over two cores, but the grid has {instances} instance{}",
            if instances == 1 { "" } else { "s" }
        )),
        Some(2) => Ok(2),
        Some(n) => Err(format!("LNC is 1 or 2, not {n}")),
    }
}

/// Compiles the instances of a grid for `cores` physical cores: core `c`
/// gets instances `c·n/cores .. (c+1)·n/cores` (compiled with
/// [`compile_grid`]). One core is exactly `compile_grid` of every instance.
pub fn compile_launch(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
    cores: usize,
) -> Result<Launch, Vec<Diagnostic>> {
    if cores <= 1 || kernels.len() < cores {
        return compile_grid(kernels, sources, config).map(Launch::single);
    }
    let n = kernels.len();
    let mut programs = Vec::with_capacity(cores);
    let mut errors = Vec::new();
    for c in 0..cores {
        let part = &kernels[c * n / cores..(c + 1) * n / cores];
        match compile_grid(part, sources, config) {
            Ok(p) => programs.push(p),
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
    if let Err(problems) = nkic_isa::verify_launch(&launch) {
        let args_differ = problems
            .iter()
            .any(|e| e.message.contains("share the kernel's arguments"));
        let code = if args_differ {
            codes::GRID_MISMATCH
        } else {
            codes::INTERNAL_VERIFY
        };
        return Err(problems
            .into_iter()
            .map(|e| Diagnostic::error(code, format!("the two-core launch does not verify: {e}")))
            .collect());
    }
    Ok(launch)
}

#[cfg(test)]
mod tests {
    use super::*;

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
