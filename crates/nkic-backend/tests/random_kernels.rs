//! The scheduler oracle over random kernels: random sequences of DMA,
//! elementwise, activation, memset, transpose and matmul ops (accumulating
//! or not) over a few reused tiles
//! (so true, anti and output dependencies all occur) must give the same
//! output bytes under the optimized and the sequential schedule, with the
//! simulator's race sanitizer on.

mod common;

use std::fmt::Write;

use nkic_backend::{BackendConfig, Schedule, compile};
use proptest::prelude::*;

const TILES: usize = 4;
const PSUMS: usize = 2;
const INPUTS: usize = 2;
const BLOCKS: usize = 2;

/// Builds the IR text of a kernel from `steps`; see the module doc.
fn kernel_text(steps: &[(u8, u8, u8, u8)]) -> String {
    let mut t = String::new();
    let mut line = 1usize;
    let mut loc = || {
        line += 1;
        format!("kernel.py:{}..{}", 40 * (line - 1), 40 * (line - 1) + 8)
    };
    t.push_str(
        "kernel \"random\" target=trn3 program_id=[0] num_programs=[1]\nfile 0 \"kernel.py\"\n",
    );
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
    for (i, op) in ops.iter().enumerate() {
        writeln!(t, "op{i} = {op} @ {}", loc()).unwrap();
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn optimized_and_sequential_agree(steps in proptest::collection::vec(any::<(u8, u8, u8, u8)>(), 1..40)) {
        let text = kernel_text(&steps);
        let (kernel, sources) = common::load_text(&text);
        let opt = compile(&kernel, &sources, &BackendConfig { schedule: Schedule::Optimized })
            .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let seq = compile(&kernel, &sources, &BackendConfig { schedule: Schedule::Sequential })
            .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let inputs = common::inputs(&opt, 11);
        let a = common::simulate(&opt, &inputs);
        let b = common::simulate(&seq, &inputs);
        prop_assert_eq!(a.outputs, b.outputs, "kernel:\n{}\nprogram:\n{}", text, opt);
        // List scheduling is a heuristic, so allow it a little slack against
        // the strictly sequential program rather than none.
        prop_assert!(
            a.total_ps * 20 <= b.total_ps * 21,
            "optimized is slower than sequential:\n{}",
            opt
        );
    }
}
