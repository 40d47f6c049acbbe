//! The scheduler oracle over random kernels: random sequences of DMA,
//! elementwise, activation, memset, transpose and matmul ops (accumulating
//! or not) over a few reused tiles
//! (so true, anti and output dependencies all occur) must give the same
//! output bytes under the optimized and the sequential schedule, with the
//! simulator's race sanitizer on. A second property wraps a random slice of
//! the ops in a `dynamic_range` loop of one or two trips whose body starts
//! with a load and ends with a store at a run-time offset (the induction
//! register), so the dynamic path's top-level graph is checked the same
//! way: static ops before and after the loop overlap with it only where
//! they are independent of it.

mod common;

use std::fmt::Write;

use nkic_backend::{BackendConfig, Schedule, compile};
use proptest::prelude::*;

const TILES: usize = 4;
const PSUMS: usize = 2;
const INPUTS: usize = 2;
const BLOCKS: usize = 2;

/// A dynamic loop around ops `start..end` of a random kernel, with its
/// trip count (at most `BLOCKS`, so run-time offsets stay in bounds) and
/// the tile its first and last ops load and store.
#[derive(Clone, Copy, Debug)]
struct DynLoop {
    start: u8,
    len: u8,
    trips: u8,
    tile: u8,
}

/// Builds the IR text of a kernel from `steps`; see the module doc.
fn kernel_text(steps: &[(u8, u8, u8, u8)]) -> String {
    kernel_text_with(steps, None)
}

/// [`kernel_text`], with the ops optionally wrapped in a dynamic loop.
fn kernel_text_with(steps: &[(u8, u8, u8, u8)], dyn_loop: Option<DynLoop>) -> String {
    let mut t = String::new();
    let mut line = 1usize;
    let mut loc = || {
        line += 1;
        format!("kernel.py:{}..{}", 40 * (line - 1), 40 * (line - 1) + 8)
    };
    t.push_str(
        "kernel \"random\" target=trn3 program_id=[0] num_programs=[1]\nfile 0 \"kernel.py\"\n",
    );
    if dyn_loop.is_some() {
        t.push_str("reg r0 \"i\"\n");
    }
    let rows = 128 * BLOCKS;
    for i in 0..INPUTS {
        writeln!(
            t,
            "t{i} = shared_hbm float32[{rows}, 128] \"x{i}\" arg={i} input @ {}",
            loc()
        )
        .unwrap();
    }
    let out = INPUTS;
    writeln!(
        t,
        "t{out} = shared_hbm float32[{rows}, 128] \"out\" arg={out} output @ {}",
        loc()
    )
    .unwrap();
    let tile = |k: usize| INPUTS + 1 + k;
    let psum = |k: usize| INPUTS + 1 + TILES + k;
    for k in 0..TILES {
        writeln!(
            t,
            "t{} = sbuf float32[128, 128] \"tile{k}\" @ {}",
            tile(k),
            loc()
        )
        .unwrap();
    }
    for k in 0..PSUMS {
        writeln!(
            t,
            "t{} = psum float32[128, 128] \"acc{k}\" @ {}",
            psum(k),
            loc()
        )
        .unwrap();
    }
    let full = "[0:128, 0:128]";
    let mut init = [false; TILES];
    let mut psum_init = [false; PSUMS];
    let mut ops = Vec::new();
    let block = |b: u8| {
        let b = usize::from(b) % BLOCKS;
        format!("[{}:{}, 0:128]", b * 128, b * 128 + 128)
    };
    for &(kind, a, b, c) in steps {
        let (ta, tb, tc) = (
            usize::from(a) % TILES,
            usize::from(b) % TILES,
            usize::from(c) % TILES,
        );
        let ready = |k: usize, init: &[bool; TILES]| init[k];
        let op = match kind % 10 {
            0 => {
                init[ta] = true;
                format!(
                    "dma_copy dst=t{}{full} src=t{}{} engine=dma",
                    tile(ta),
                    usize::from(b) % INPUTS,
                    block(c)
                )
            }
            1 if ready(tb, &init) && ready(tc, &init) => {
                init[ta] = true;
                let op = ["add", "multiply", "maximum", "subtract"][usize::from(a / 4) % 4];
                format!(
                    "tensor_tensor dst=t{}{full} src0=t{}{full} src1=t{}{full} op={op} engine=?",
                    tile(ta),
                    tile(tb),
                    tile(tc)
                )
            }
            2 if ready(tb, &init) => {
                init[ta] = true;
                format!(
                    "tensor_scalar dst=t{}{full} src=t{}{full} op0=multiply operand0=0.75 op1=add operand1=0.5 engine=?",
                    tile(ta),
                    tile(tb)
                )
            }
            3 if ready(tb, &init) => {
                init[ta] = true;
                let func = ["tanh", "sigmoid", "relu", "square"][usize::from(c) % 4];
                format!(
                    "activation dst=t{}{full} src=t{}{full} func={func} scale=0.5 engine=scalar",
                    tile(ta),
                    tile(tb)
                )
            }
            4 => {
                init[ta] = true;
                format!("memset dst=t{}{full} value=0.25 engine=?", tile(ta))
            }
            5 if ready(tb, &init) && ready(tc, &init) => {
                let p = usize::from(a) % PSUMS;
                psum_init[p] = true;
                format!(
                    "nc_matmul dst=t{}{full} stationary=t{}{full} moving=t{}{full} engine=tensor",
                    psum(p),
                    tile(tb),
                    tile(tc)
                )
            }
            6 if psum_init[usize::from(b) % PSUMS] => {
                init[ta] = true;
                format!(
                    "tensor_copy dst=t{}{full} src=t{}{full} engine=?",
                    tile(ta),
                    psum(usize::from(b) % PSUMS)
                )
            }
            7 if ready(ta, &init) => {
                format!(
                    "dma_copy dst=t{out}{} src=t{}{full} engine=dma",
                    block(b),
                    tile(ta)
                )
            }
            8 if ready(tb, &init) => {
                let p = usize::from(a) % PSUMS;
                psum_init[p] = true;
                format!(
                    "nc_transpose dst=t{}{full} src=t{}{full} engine=tensor",
                    psum(p),
                    tile(tb)
                )
            }
            9 if ready(tb, &init) && ready(tc, &init) && psum_init[usize::from(a) % PSUMS] => {
                let p = usize::from(a) % PSUMS;
                format!(
                    "nc_matmul dst=t{}{full} stationary=t{}{full} moving=t{}{full} accumulate=true engine=tensor",
                    psum(p),
                    tile(tb),
                    tile(tc)
                )
            }
            _ => continue,
        };
        ops.push(op);
    }
    // Every output block is written at the end from an initialised tile,
    // or from the inputs when no tile is.
    for blk in 0..BLOCKS {
        let src = match init.iter().position(|&i| i) {
            Some(k) => format!("t{}{full}", tile(k)),
            None => format!("t0{}", block(blk as u8)),
        };
        if src.starts_with("t0[") {
            ops.push(format!(
                "dma_copy dst=t{}{full} src={src} engine=dma",
                tile(0)
            ));
            ops.push(format!(
                "dma_copy dst=t{out}{} src=t{}{full} engine=dma",
                block(blk as u8),
                tile(0)
            ));
            init[0] = true;
        } else {
            ops.push(format!(
                "dma_copy dst=t{out}{} src={src} engine=dma",
                block(blk as u8)
            ));
        }
    }
    let Some(d) = dyn_loop else {
        for (i, op) in ops.iter().enumerate() {
            writeln!(t, "op{i} = {op} @ {}", loc()).unwrap();
        }
        return t;
    };
    // The loop: a slice of the ops (they keep their order, so every tile
    // they read is initialised before), led by a load and closed by a
    // store of tile `d.tile` at block `r0` of input 0 and of the output.
    let start = usize::from(d.start) % (ops.len() + 1);
    let end = start + usize::from(d.len) % (ops.len() - start + 1);
    let trips = 1 + usize::from(d.trips) % BLOCKS;
    let k = tile(usize::from(d.tile) % TILES);
    let block_ap = "ap([[128, 128], [1, 128]], offset=0, scalar_offset=r0*16384)";
    let mut n = 0usize;
    let mut emit = |t: &mut String, indent: &str, op: &str, loc: String| {
        writeln!(t, "{indent}op{n} = {op} @ {loc}").unwrap();
        n += 1;
    };
    for op in &ops[..start] {
        emit(&mut t, "", op, loc());
    }
    writeln!(
        t,
        "dyn0 = dynamic_range start=0 stop={trips} step=1 iv=r0 @ {} {{",
        loc()
    )
    .unwrap();
    emit(
        &mut t,
        "  ",
        &format!("dma_copy dst=t{k}{full} src=t0.{block_ap} engine=dma"),
        loc(),
    );
    for op in &ops[start..end] {
        emit(&mut t, "  ", op, loc());
    }
    emit(
        &mut t,
        "  ",
        &format!("dma_copy dst=t{out}.{block_ap} src=t{k}{full} engine=dma"),
        loc(),
    );
    t.push_str("}\n");
    for op in &ops[end..] {
        emit(&mut t, "", op, loc());
    }
    t
}

/// Compiles `text` under both schedules and runs both on the same inputs
/// (seeded by `seed`): the outputs must be identical, and the optimized
/// program at most 5% slower than the sequential one (list scheduling is a
/// heuristic, so it gets a little slack rather than none).
fn schedules_agree(text: &str, seed: u64) -> Result<(), TestCaseError> {
    let (kernel, sources) = common::load_text(text);
    let build = |schedule| {
        compile(&kernel, &sources, &BackendConfig::scheduled(schedule))
            .unwrap_or_else(|d| panic!("{d:?}\n{text}"))
    };
    let (opt, seq) = (build(Schedule::Optimized), build(Schedule::Sequential));
    let inputs = common::inputs(&opt, seed);
    let a = common::simulate(&opt, &inputs);
    let b = common::simulate(&seq, &inputs);
    prop_assert_eq!(a.outputs, b.outputs, "kernel:\n{}\nprogram:\n{}", text, opt);
    prop_assert!(
        a.total_ps * 20 <= b.total_ps * 21,
        "optimized is slower than sequential:\n{}",
        opt
    );
    Ok(())
}

/// A list of random steps for `kernel_text`, of a length in `len`.
fn random_steps(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(u8, u8, u8, u8)>> {
    proptest::collection::vec(any::<(u8, u8, u8, u8)>(), len)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn optimized_and_sequential_agree(steps in random_steps(1..40)) {
        schedules_agree(&kernel_text(&steps), 11)?;
    }

    #[test]
    fn dynamic_loops_agree(
        steps in random_steps(1..30),
        (start, len, trips, tile) in any::<(u8, u8, u8, u8)>(),
    ) {
        let dyn_loop = DynLoop { start, len, trips, tile };
        schedules_agree(&kernel_text_with(&steps, Some(dyn_loop)), 13)?;
    }
}

/// Compiles `text` as it is and with every on-chip tile spilled (twice, so
/// the SBUF copies of spilled PSUM tiles go to HBM too), and runs both on
/// the same inputs: spilling must not change a byte of the outputs.
fn spilling_keeps_outputs(text: &str, seed: u64) -> Result<(), TestCaseError> {
    let (kernel, sources) = common::load_text(text);
    let config = BackendConfig::default();
    let plain = compile(&kernel, &sources, &config).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let once = nkic_backend::spill::spill_everything(std::slice::from_ref(&kernel), &sources)
        .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let twice = nkic_backend::spill::spill_everything(&once, &sources)
        .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let spilled = nkic_backend::compile_grid(&twice, &sources, &config)
        .unwrap_or_else(|d| panic!("{d:?}\n{text}\n{}", twice[0]));
    let inputs = common::inputs(&plain, seed);
    let a = common::simulate(&plain, &inputs);
    let b = common::simulate(&spilled, &inputs);
    prop_assert_eq!(
        a.outputs,
        b.outputs,
        "kernel:\n{}\nspilled:\n{}",
        text,
        spilled
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn spilling_everything_keeps_the_outputs(steps in random_steps(1..40)) {
        spilling_keeps_outputs(&kernel_text(&steps), 17)?;
    }
}
