//! The run report of `nkic run` / `nkic exec` (`--report human|json`) and
//! of the Python package's results: simulated time, per-queue busy time
//! and utilisation, HBM traffic, flops, the outputs and the lower bound.

use nkic_isa::{Launch, Queue};
use nkic_sim::RunResult;
use serde_json::json;

/// The two forms of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// A short summary for people.
    Human,
    /// One JSON object on one line.
    Json,
}

/// The run summary (`nkic run`'s report, `nkic.compile(...).run()`'s
/// `report`); `lower_bound_ns` is the compiled program's
/// bound (`nkic run`), absent for hand-written programs.
///
/// A multi-core launch names each queue with its core (`core1.vector`,
/// also as the JSON `engines` keys) and the JSON report gains `cores`: one
/// entry per core with its simulated time (its last completion) and
/// instruction count.
pub fn run_report(
    launch: &Launch,
    result: &RunResult,
    format: ReportFormat,
    lower_bound_ns: Option<f64>,
) -> String {
    use std::fmt::Write;
    let ns = |ps: u64| ps as f64 / 1000.0;
    let multi = launch.is_multi_core();
    let target = launch.target();
    let name = |core: u8, queue: Queue| crate::profile::queue_name(multi.then_some(core), queue);
    let mut s = String::new();
    match format {
        ReportFormat::Json => {
            let mut engines = serde_json::Map::new();
            for q in &result.per_queue {
                engines.insert(
                    name(q.core, q.queue),
                    json!({ "busy_ns": ns(q.busy_ps), "instructions": q.instructions }),
                );
            }
            let mut report = json!({
                "target": target.name(),
                "simulated_ns": result.total_ns(),
                "engines": engines,
                "instructions": result.instructions,
                "hbm_bytes_read": result.hbm_bytes_read,
                "hbm_bytes_written": result.hbm_bytes_written,
                "flops": result.flops,
                "outputs": result.outputs.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            });
            if let Some(bound) = lower_bound_ns {
                report["lower_bound_ns"] = json!(bound);
            }
            if multi {
                let cores: Vec<_> = (0..launch.cores.len())
                    .map(|c| {
                        let c = u8::try_from(c).unwrap_or(u8::MAX);
                        let instructions: u64 = result
                            .per_queue
                            .iter()
                            .filter(|q| q.core == c)
                            .map(|q| q.instructions)
                            .sum();
                        json!({
                            "core": c,
                            "simulated_ns": ns(result.core_end_ps(c)),
                            "instructions": instructions,
                        })
                    })
                    .collect();
                report["cores"] = json!(cores);
            }
            let _ = writeln!(s, "{report}");
        }
        ReportFormat::Human => {
            let on = if multi {
                format!(
                    "{} cores of {} (LNC={})",
                    launch.cores.len(),
                    target.name(),
                    launch.cores.len()
                )
            } else {
                target.name().to_owned()
            };
            let _ = writeln!(
                s,
                "simulated time: {:.3} us on {on}",
                result.total_ns() / 1000.0,
            );
            if let Some(bound) = lower_bound_ns {
                let ratio = if bound > 0.0 {
                    result.total_ns() / bound
                } else {
                    0.0
                };
                let _ = writeln!(
                    s,
                    "lower bound: {:.3} us (simulated time is {ratio:.2}x the bound)",
                    bound / 1000.0
                );
            }
            let width = if multi { 12 } else { 8 };
            let _ = writeln!(
                s,
                "{:<width$} {:>12} {:>7} {:>8}",
                "queue", "busy (ns)", "util", "instrs"
            );
            for q in &result.per_queue {
                let util = if result.total_ps == 0 {
                    0.0
                } else {
                    100.0 * q.busy_ps as f64 / result.total_ps as f64
                };
                let _ = writeln!(
                    s,
                    "{:<width$} {:>12.1} {:>6.1}% {:>8}",
                    name(q.core, q.queue),
                    ns(q.busy_ps),
                    util,
                    q.instructions
                );
            }
            let _ = writeln!(
                s,
                "hbm: {} bytes read, {} bytes written; {} flops; {} instructions",
                result.hbm_bytes_read, result.hbm_bytes_written, result.flops, result.instructions
            );
        }
    }
    s
}
