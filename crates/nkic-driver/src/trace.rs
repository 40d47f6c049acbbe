//! `trace.json` of `nkic profile`: the run as Chrome trace-event JSON
//! (the "JSON object format" that Perfetto's UI and `chrome://tracing`
//! open).
//!
//! # Layout
//!
//! * One process (`pid` 1) named after the kernel file and target, with one
//!   thread (`tid`) per queue of the program, in program order (`tensor`,
//!   `vector`, …, `dma0`, …), each named by `thread_name` and ordered by
//!   `thread_sort_index` metadata events (`ph: "M"`).
//! * Every executed instruction is a complete event (`ph: "X"`) on its
//!   queue's thread from its start for as long as it occupies the queue
//!   (`free_ps - start_ps`; a DMA transfer until its data has moved). Its
//!   `name` is the mnemonic, `cat` the queue's engine, and `args` hold
//!   `opcode`, `operands` (`field: memory dtype[shape]`), `bytes` (data
//!   bytes of its operands), `flops`, `hbm_bytes`, `source`
//!   (`file:line:col`), `index` (position in the stream), `seq`
//!   (dynamic position), `end_us` (when its results are visible) and, for
//!   transfers, the DMA engines used.
//! * A semaphore wait that held an instruction back is its own complete
//!   event on the same thread, `cat` `semaphore`, named
//!   `wait <sem> >= <count>`, from when the queue could have issued the
//!   instruction to when it did, and a flow arrow (`ph` `s` then `f`, `cat`
//!   `semaphore`, one `id` per arrow) runs from the instruction whose
//!   increment released it to it.
//! * A second process (`pid` 2, "DMA engines") has one thread per DMA
//!   engine; every transfer is a complete event on each engine it used,
//!   for as long as its data moved there (`args`: `queue`, `seq`,
//!   `source`).
//! * Times (`ts`, `dur`) are microseconds printed with six decimals, so
//!   the picosecond times of the simulator are exact; events are sorted by
//!   `ts` within each thread and never overlap there.
//!
//! The top-level object also carries `displayTimeUnit: "ns"` and
//! `otherData` with the target and total simulated time.
//!
//! A multi-core launch (LNC=2) has the pair of processes once per core:
//! core `c`'s queues in `pid` `2c + 1` (named `… core c`) and its DMA
//! engines in `pid` `2c + 2` (`core c DMA engines`); a `core_barrier` held
//! back by the other core has a `wait for the other core` slice (`cat`
//! `barrier`) and a flow arrow from the other core's barrier, and
//! `otherData` gains `cores`. A one-core run prints exactly the layout
//! above.

use std::fmt::Write;

use nkic_isa::{AccessPattern, Launch, Memory, Program, Role};
use nkic_sim::{RunResult, TraceEvent};

/// Picoseconds as microseconds with six decimals.
fn us(ps: u64) -> String {
    format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000)
}

/// A JSON string literal.
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// `sbuf bf16[128,512]`, `hbm.a f32[128,512]`.
pub fn describe(program: &Program, ap: &AccessPattern) -> String {
    let mem = match ap.mem {
        Memory::Sbuf => "sbuf".to_owned(),
        Memory::Psum => "psum".to_owned(),
        Memory::Hbm(id) => match program.tensor(id) {
            Some(t) => format!("hbm.{}", t.name),
            None => "hbm".to_owned(),
        },
    };
    let shape: Vec<String> = ap.shape().iter().map(u64::to_string).collect();
    format!("{mem} {}[{}]", ap.dtype, shape.join(","))
}

/// The args object of an instruction's slice.
fn args(program: &Program, e: &TraceEvent) -> String {
    let inst = program
        .stream(e.queue)
        .and_then(|s| s.get(e.index))
        .map(|i| &i.op);
    let mut operands = Vec::new();
    let mut bytes = 0u64;
    if let Some(op) = inst {
        for o in op.operands() {
            let role = if o.role == Role::Write { "out" } else { "in" };
            operands.push(format!(
                "{}:{}",
                quote(o.field),
                quote(&format!("{role} {}", describe(program, o.ap)))
            ));
            bytes += o.ap.num_elements().saturating_mul(o.ap.elem_bytes());
        }
    }
    let source = e
        .line
        .and_then(|l| program.location(l))
        .map(|(f, line, col)| format!("{f}:{line}:{col}"));
    let mut out = format!(
        "{{\"opcode\":{},\"operands\":{{{}}},\"bytes\":{bytes},\"flops\":{},\"hbm_bytes\":{},\"source\":{},\"index\":{},\"seq\":{},\"end_us\":{}",
        quote(e.mnemonic),
        operands.join(","),
        e.flops,
        e.hbm_bytes,
        source.map_or_else(|| "null".to_owned(), |s| quote(&s)),
        e.index,
        e.seq,
        us(e.end_ps)
    );
    if let Some(d) = &e.dma {
        let _ = write!(
            out,
            ",\"dma_engines\":{},\"first_dma_engine\":{},\"data_start_us\":{},\"data_end_us\":{}",
            d.engines,
            d.first_engine,
            us(d.data_start_ps),
            us(d.data_end_ps)
        );
    }
    out.push('}');
    out
}

/// The trace of a traced run (`SimConfig::trace` on); `title` names the
/// process (the kernel or program file). A multi-core launch has one pair
/// of processes per core (module doc).
pub fn trace_json(launch: &Launch, result: &RunResult, title: &str) -> String {
    let multi = launch.is_multi_core();
    let mut events: Vec<String> = Vec::new();
    let mut flow = 0u64;
    for (c, program) in launch.cores.iter().enumerate() {
        let core = u8::try_from(c).unwrap_or(u8::MAX);
        let (pid, dma_pid) = (2 * c + 1, 2 * c + 2);
        let (name, dma_name) = if multi {
            (
                format!("{title} ({}) core {c}", program.target.name()),
                format!("core {c} DMA engines"),
            )
        } else {
            (
                format!("{title} ({})", program.target.name()),
                "DMA engines".to_owned(),
            )
        };
        core_events(
            program,
            result,
            core,
            (pid, dma_pid),
            (&name, &dma_name),
            &mut flow,
            &mut events,
        );
    }
    // Arrows between the cores: from the paired barrier that arrived last
    // to the barrier it held back.
    if multi {
        let mut start_of = std::collections::HashMap::new();
        for e in &result.trace {
            start_of.insert((e.core, e.queue, e.seq), e.ready_ps);
        }
        for e in &result.trace {
            let nkic_sim::Cause::Barrier { core, queue, seq } = e.cause else {
                continue;
            };
            let (Some(from), Some(to), Some(&from_ts)) = (
                tid_of(launch, core, queue),
                tid_of(launch, e.core, e.queue),
                start_of.get(&(core, queue, seq)),
            ) else {
                continue;
            };
            flow += 1;
            events.push(format!(
                "{{\"ph\":\"s\",\"pid\":{},\"tid\":{},\"ts\":{},\"id\":{flow},\"name\":\"core_barrier\",\"cat\":\"barrier\"}}",
                from.0,
                from.1,
                us(from_ts)
            ));
            events.push(format!(
                "{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{},\"tid\":{},\"ts\":{},\"id\":{flow},\"name\":\"core_barrier\",\"cat\":\"barrier\"}}",
                to.0,
                to.1,
                us(e.start_ps)
            ));
        }
    }
    let mut out = String::from("{\"traceEvents\":[\n");
    out.push_str(&events.join(",\n"));
    let _ = write!(
        out,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"target\":{},\"simulated_us\":{}",
        quote(launch.target().name()),
        us(result.total_ps)
    );
    if multi {
        let _ = write!(out, ",\"cores\":{}", launch.cores.len());
    }
    out.push_str("}}\n");
    out
}

/// The (pid, tid) of queue `queue` of core `core`.
fn tid_of(launch: &Launch, core: u8, queue: nkic_isa::Queue) -> Option<(usize, usize)> {
    let c = usize::from(core);
    launch
        .core(c)?
        .queues
        .iter()
        .position(|s| s.queue == queue)
        .map(|i| (2 * c + 1, i + 1))
}

/// The events of one core: its queue threads in process `pids.0`, its DMA
/// engines in process `pids.1`.
fn core_events(
    program: &Program,
    result: &RunResult,
    core: u8,
    pids: (usize, usize),
    names: (&str, &str),
    flow: &mut u64,
    events: &mut Vec<String>,
) {
    let (pid, dma_pid) = pids;
    let trace: Vec<&TraceEvent> = result.trace.iter().filter(|e| e.core == core).collect();
    events.push(format!(
        "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"ts\":0,\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
        quote(names.0)
    ));
    for (tid, stream) in program.queues.iter().enumerate() {
        let tid = tid + 1;
        events.push(format!(
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"ts\":0,\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}}",
            quote(&stream.queue.to_string())
        ));
        events.push(format!(
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
        ));
    }
    // Per thread in time order (the trace is sorted by start, and a
    // queue's events are in execution order with increasing starts).
    for (tid, stream) in program.queues.iter().enumerate() {
        let tid = tid + 1;
        let cat = stream.queue.engine().name();
        for e in trace.iter().filter(|e| e.queue == stream.queue) {
            if let Some(w) = e.waited
                && e.start_ps > e.ready_ps
            {
                let sem = program.sem_name(w.sem).unwrap_or("?");
                events.push(format!(
                    "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"semaphore\",\"args\":{{\"semaphore\":{},\"count\":{}}}}}",
                    us(e.ready_ps),
                    us(e.start_ps - e.ready_ps),
                    quote(&format!("wait {sem} >= {}", w.count)),
                    quote(sem),
                    w.count
                ));
            } else if matches!(e.cause, nkic_sim::Cause::Barrier { .. }) && e.start_ps > e.ready_ps
            {
                events.push(format!(
                    "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":\"wait for the other core\",\"cat\":\"barrier\",\"args\":{{}}}}",
                    us(e.ready_ps),
                    us(e.start_ps - e.ready_ps),
                ));
            } else if let nkic_sim::Cause::Port { queue, .. } = e.cause
                && e.start_ps > e.ready_ps
            {
                events.push(format!(
                    "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"port\",\"args\":{{}}}}",
                    us(e.ready_ps),
                    us(e.start_ps - e.ready_ps),
                    quote(&format!("wait for the RAM port {queue} holds")),
                ));
            }
            events.push(format!(
                "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":{},\"args\":{}}}",
                us(e.start_ps),
                us(e.free_ps.saturating_sub(e.start_ps)),
                quote(e.mnemonic),
                quote(cat),
                args(program, e)
            ));
        }
    }
    // Flow arrows from the signalling instruction to the released one.
    let tid_of = |q: nkic_isa::Queue| {
        program
            .queues
            .iter()
            .position(|s| s.queue == q)
            .map(|i| i + 1)
    };
    let mut start_of = std::collections::HashMap::new();
    for e in &trace {
        start_of.insert((e.queue, e.seq), e.start_ps);
    }
    for e in &trace {
        let (Some(_), nkic_sim::Cause::Semaphore { queue, seq }) = (e.waited, e.cause) else {
            continue;
        };
        let (Some(from_tid), Some(to_tid), Some(&from_ts)) =
            (tid_of(queue), tid_of(e.queue), start_of.get(&(queue, seq)))
        else {
            continue;
        };
        *flow += 1;
        let flow = *flow;
        events.push(format!(
            "{{\"ph\":\"s\",\"pid\":{pid},\"tid\":{from_tid},\"ts\":{},\"id\":{flow},\"name\":\"signal\",\"cat\":\"semaphore\"}}",
            us(from_ts)
        ));
        events.push(format!(
            "{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{pid},\"tid\":{to_tid},\"ts\":{},\"id\":{flow},\"name\":\"signal\",\"cat\":\"semaphore\"}}",
            us(e.start_ps)
        ));
    }
    // The DMA engines.
    let engines = program.target.figures().dma_engines.max(1);
    let mut per_engine: Vec<Vec<(u64, String)>> = vec![Vec::new(); engines as usize];
    for e in &trace {
        let Some(d) = &e.dma else {
            continue;
        };
        let source = e.line.and_then(|l| program.location(l)).map_or_else(
            || "null".to_owned(),
            |(f, l, c)| quote(&format!("{f}:{l}:{c}")),
        );
        for (engine, &begin) in (0..d.engines)
            .map(|i| (d.first_engine + i) % engines)
            .zip(&d.engine_begins_ps)
        {
            per_engine[engine as usize].push((
                begin,
                format!(
                    "{{\"ph\":\"X\",\"pid\":{dma_pid},\"tid\":{},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"dma\",\"args\":{{\"queue\":{},\"seq\":{},\"data_us\":{},\"source\":{source}}}}}",
                    engine + 1,
                    us(begin),
                    us(d.engine_busy_ps),
                    quote(e.mnemonic),
                    quote(&e.queue.to_string()),
                    e.seq,
                    us(d.engine_ps)
                ),
            ));
        }
    }
    if per_engine.iter().any(|l| !l.is_empty()) {
        events.push(format!(
            "{{\"ph\":\"M\",\"pid\":{dma_pid},\"tid\":0,\"ts\":0,\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
            quote(names.1)
        ));
        for (i, list) in per_engine.iter_mut().enumerate() {
            let tid = i + 1;
            events.push(format!(
                "{{\"ph\":\"M\",\"pid\":{dma_pid},\"tid\":{tid},\"ts\":0,\"name\":\"thread_name\",\"args\":{{\"name\":\"engine {i}\"}}}}"
            ));
            events.push(format!(
                "{{\"ph\":\"M\",\"pid\":{dma_pid},\"tid\":{tid},\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
            ));
            list.sort_by_key(|(begin, _)| *begin);
            events.extend(list.drain(..).map(|(_, e)| e));
        }
    }
}
