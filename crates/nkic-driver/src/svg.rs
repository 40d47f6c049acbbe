//! `timeline.svg` of `nkic profile`: the run drawn as one row per queue
//! against simulated time, readable in any browser without other tools.
//!
//! The drawing area is `WIDTH` pixels wide. Each row is cut into one-pixel
//! columns; a column is coloured by the instruction that occupies its queue
//! longest within it (colour per mnemonic, from a fixed palette in order of
//! first appearance), and neighbouring columns of the same instruction are
//! merged into one rectangle whose tooltip (`<title>`) names it, its source
//! lines and its busy time. Semaphore waits are a thin grey bar under the
//! row. So the file stays small (at most a few rectangles per pixel and
//! row) however long the run. Below the rows: a time axis in microseconds
//! and a legend of the instructions.
//!
//! A multi-core launch (LNC=2) has the rows of core 0, then those of core
//! 1, named `core0.vector`, `core1.dma0`, …, against the one time axis; a
//! `core_barrier` waiting for the other core shows as a wait.

use std::collections::BTreeMap;
use std::fmt::Write;

use nkic_isa::{Launch, Queue};
use nkic_sim::RunResult;

/// Width of the drawing area in pixels.
const WIDTH: usize = 1200;
/// Left margin for the queue names.
const LEFT: usize = 80;
const ROW: usize = 22;
const TOP: usize = 40;

/// Colour-blind-friendly categorical palette (Okabe–Ito plus extras).
const PALETTE: [&str; 12] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#7F3C8D",
    "#11A579", "#3969AC", "#F2B701", "#E73F74",
];

/// Escapes text for XML character data and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// One pixel column of one row: busy picoseconds per mnemonic, and the
/// picoseconds spent waiting on semaphores.
#[derive(Default, Clone)]
struct Column {
    busy: BTreeMap<&'static str, u64>,
    wait: u64,
}

/// Adds `[a, b)` (picoseconds) to the columns it covers.
fn spread(cols: &mut [Column], a: u64, b: u64, per_px: f64, mut add: impl FnMut(&mut Column, u64)) {
    if b <= a || cols.is_empty() {
        return;
    }
    let first = ((a as f64 / per_px) as usize).min(cols.len() - 1);
    let last = (((b as f64 / per_px).ceil() as usize).max(first + 1)).min(cols.len());
    for (x, col) in cols.iter_mut().enumerate().take(last).skip(first) {
        let lo = ((x as f64 * per_px) as u64).max(a);
        let hi = (((x + 1) as f64 * per_px) as u64).min(b);
        if hi > lo {
            add(col, hi - lo);
        }
    }
}

/// A "nice" tick step (1, 2 or 5 × 10^k) for about `n` ticks over `span`.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// The timeline of a traced run; `title` heads the drawing.
pub fn timeline_svg(launch: &Launch, result: &RunResult, title: &str) -> String {
    let total = result.total_ps.max(1);
    let per_px = total as f64 / WIDTH as f64;
    let multi = launch.is_multi_core();
    let queues: Vec<(u8, Queue)> = launch
        .cores
        .iter()
        .enumerate()
        .flat_map(|(c, p)| {
            let c = u8::try_from(c).unwrap_or(u8::MAX);
            p.queues.iter().map(move |s| (c, s.queue))
        })
        .collect();
    let row_name = |(c, q): (u8, Queue)| {
        if multi {
            format!("core{c}.{q}")
        } else {
            q.to_string()
        }
    };
    let mut rows: Vec<Vec<Column>> = vec![vec![Column::default(); WIDTH]; queues.len()];
    let mut colours: BTreeMap<&'static str, &'static str> = BTreeMap::new();
    let mut order: Vec<&'static str> = Vec::new();
    let mut lines: BTreeMap<(usize, &'static str), Vec<String>> = BTreeMap::new();
    for e in &result.trace {
        let Some(r) = queues.iter().position(|q| *q == (e.core, e.queue)) else {
            continue;
        };
        if !colours.contains_key(e.mnemonic) {
            colours.insert(e.mnemonic, PALETTE[order.len() % PALETTE.len()]);
            order.push(e.mnemonic);
        }
        spread(&mut rows[r], e.start_ps, e.free_ps, per_px, |c, ps| {
            *c.busy.entry(e.mnemonic).or_default() += ps;
        });
        if e.waited.is_some() || matches!(e.cause, nkic_sim::Cause::Barrier { .. }) {
            spread(&mut rows[r], e.ready_ps, e.start_ps, per_px, |c, ps| {
                c.wait += ps;
            });
        }
        let src = crate::profile::source_of(launch, e);
        let l = lines.entry((r, e.mnemonic)).or_default();
        if !l.contains(&src) && l.len() < 4 {
            l.push(src);
        }
    }
    let height = TOP + ROW * queues.len() + 90 + 16 * order.len().div_ceil(6);
    let full = LEFT + WIDTH + 20;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{full}\" height=\"{height}\" viewBox=\"0 0 {full} {height}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{full}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"18\" font-size=\"13\">{} — {} — {:.3} us simulated</text>",
        escape(title),
        launch.target().name(),
        result.total_ps as f64 / 1e6
    );
    for (r, &q) in queues.iter().enumerate() {
        let q = row_name(q);
        let y = TOP + r * ROW;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LEFT - 6,
            y + ROW / 2 + 4,
            escape(&q)
        );
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{y}\" width=\"{WIDTH}\" height=\"{}\" fill=\"#f4f4f4\"/>",
            ROW - 4
        );
        // Runs of columns with the same dominant instruction.
        let dominant: Vec<Option<&'static str>> = rows[r]
            .iter()
            .map(|c| {
                c.busy
                    .iter()
                    .max_by_key(|(m, ps)| (**ps, std::cmp::Reverse(**m)))
                    .map(|(m, _)| *m)
            })
            .collect();
        let mut x = 0;
        while x < WIDTH {
            let Some(m) = dominant[x] else {
                x += 1;
                continue;
            };
            let start = x;
            let mut busy = 0u64;
            while x < WIDTH && dominant[x] == Some(m) {
                busy += rows[r][x].busy.values().sum::<u64>();
                x += 1;
            }
            let srcs = lines.get(&(r, m)).map(|l| l.join(", ")).unwrap_or_default();
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {} ({}): {:.3} us busy in {:.3}..{:.3} us</title></rect>",
                LEFT + start,
                x - start,
                ROW - 8,
                colours.get(m).copied().unwrap_or("#888888"),
                escape(&q),
                escape(m),
                escape(&srcs),
                busy as f64 / 1e6,
                start as f64 * per_px / 1e6,
                x as f64 * per_px / 1e6
            );
        }
        // Semaphore waits as a thin bar.
        let mut x = 0;
        while x < WIDTH {
            if rows[r][x].wait == 0 {
                x += 1;
                continue;
            }
            let start = x;
            let mut wait = 0u64;
            while x < WIDTH && rows[r][x].wait > 0 {
                wait += rows[r][x].wait;
                x += 1;
            }
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"3\" fill=\"#999999\"><title>{} waiting on semaphores: {:.3} us</title></rect>",
                LEFT + start,
                y + ROW - 7,
                x - start,
                escape(&q),
                wait as f64 / 1e6
            );
        }
    }
    // Time axis.
    let axis_y = TOP + ROW * queues.len() + 6;
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{axis_y}\" x2=\"{}\" y2=\"{axis_y}\" stroke=\"#333333\"/>",
        LEFT + WIDTH
    );
    let total_us = total as f64 / 1e6;
    let step = tick_step(total_us, 10.0);
    let mut t = 0.0;
    let mut ticks = 0;
    while t <= total_us * (1.0 + 1e-9) && ticks <= 20 {
        let x = LEFT as f64 + t / total_us * WIDTH as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{axis_y}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333333\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            axis_y + 5,
            axis_y + 17,
            trim_float(t)
        );
        t += step;
        ticks += 1;
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">us</text>",
        LEFT + WIDTH,
        axis_y + 32
    );
    // Legend.
    let legend_y = axis_y + 48;
    for (i, m) in order.iter().enumerate() {
        let x = LEFT + (i % 6) * 190;
        let y = legend_y + (i / 6) * 16;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 9,
            colours.get(m).copied().unwrap_or("#888888"),
            x + 14,
            escape(m)
        );
    }
    let y = legend_y + 16 * order.len().div_ceil(6);
    let _ = writeln!(
        s,
        "<rect x=\"{LEFT}\" y=\"{}\" width=\"10\" height=\"3\" fill=\"#999999\"/><text x=\"{}\" y=\"{y}\">waiting on a semaphore</text>",
        y - 6,
        LEFT + 14
    );
    s.push_str("</svg>\n");
    s
}

/// `2.5`, `10`, `0.125` — a tick label without trailing zeros.
fn trim_float(x: f64) -> String {
    let text = format!("{x:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() || text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}
