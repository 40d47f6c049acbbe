//! Prints the tiled bf16 matmul benchmark program as `.nkasm`, or with
//! `--run` simulates it and reports the wall-clock and simulated times:
//!
//! ```text
//! cargo run --release -p nkic-sim --example matmul_nkasm -- 2048 2048 2048 > mm.nkasm
//! cargo run --release -p nkic-sim --example matmul_nkasm -- 2048 2048 2048 --run
//! ```

use std::time::Instant;

#[path = "../benches/programs.rs"]
#[allow(dead_code)]
mod programs;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (m, k, n) = match sizes.as_slice() {
        [m, k, n] => (*m, *k, *n),
        _ => (2048, 2048, 2048),
    };
    let program = programs::matmul(m, k, n);
    if !args.iter().any(|a| a == "--run") {
        print!("{}", nkic_isa::print(&program));
        return;
    }
    let inputs = nkic_sim::Inputs::new()
        .with("at", programs::bf16_bytes((k * m) as usize, 1))
        .with("b", programs::bf16_bytes((k * n) as usize, 2));
    let config = nkic_sim::SimConfig {
        trace: false,
        ..nkic_sim::SimConfig::default()
    };
    let start = Instant::now();
    let verified = match nkic_isa::verify(&program) {
        Ok(verified) => verified,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            std::process::exit(1);
        }
    };
    match nkic_sim::run(verified, &inputs, &config) {
        Ok(res) => {
            let wall = start.elapsed().as_secs_f64();
            println!(
                "{m}x{k}x{n}: {} instructions, {:.3} s wall, {:.1} µs simulated, {:.2} GMAC/s simulated per wall second",
                res.instructions,
                wall,
                res.total_ns() / 1000.0,
                res.flops as f64 / 2.0 / wall / 1e9
            );
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
