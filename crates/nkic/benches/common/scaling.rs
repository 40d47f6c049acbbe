//! Generated kernels whose size is a parameter, shared by the scaling and
//! quality benches: the cases of issue 15 item 4 ("cost that grows
//! linearly with the program").

/// A kernel `name(a)` on `[128, 8]` float32 tiles: `body` (lines indented
/// by four spaces) runs between the allocation of the output `out` and
/// `return out`.
fn kernel(name: &str, body: &str) -> String {
    kernel_of(name, (128, 8), body)
}

/// `kernel` with an output of `shape`.
fn kernel_of(name: &str, shape: (usize, usize), body: &str) -> String {
    let (rows, cols) = shape;
    format!(
        "import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def {name}(a):
    out = nl.ndarray(({rows}, {cols}), dtype=nl.float32, buffer=nl.shared_hbm)
{body}    return out
"
    )
}

/// `n` `tensor_scalar` ops in a row on one tile: a chain where each op
/// reads what the previous one wrote (`n + 2` instructions).
pub fn sequential_tensor_scalar(n: usize) -> String {
    kernel(
        "chain",
        &format!(
            "    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    for i in nl.sequential_range({n}):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=t)
"
        ),
    )
}

/// `n` memsets of tiles nothing reads, then one stored tile.
pub fn independent_memsets(n: usize) -> String {
    kernel(
        "memsets",
        &format!(
            "    for i in nl.affine_range({n}):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=2.0)
    nisa.dma_copy(dst=out, src=t)
"
        ),
    )
}

/// A three-instruction kernel, for a launch grid of many instances.
pub fn grid_instance() -> String {
    kernel(
        "scale",
        "    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=u)
",
    )
}

/// A dynamic loop that never ends in practice (a billion iterations): the
/// run must stop with E2007 at the simulated-time limit.
pub fn runaway_loop() -> String {
    kernel(
        "runaway",
        "    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    for i in nl.dynamic_range(1000000000):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=t)
",
    )
}

/// A dynamic loop of stores that never ends in practice: the queues that
/// only count through the loop beside the one storing (every queue that
/// runs an op runs every loop's control) must not make the run slow to
/// reach E2007.
pub fn runaway_store_loop() -> String {
    kernel(
        "runaway_stores",
        "    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    for i in nl.dynamic_range(1000000000):
        nisa.dma_copy(dst=out, src=t)
    nisa.dma_copy(dst=out, src=t)
",
    )
}

/// One `[128, 8]` tile stored into a `rows × cols` float32 output and the
/// rest never written: the run's memory must follow the bytes written,
/// not the output's size.
pub fn one_tile_of_output(rows: usize, cols: usize) -> String {
    kernel_of(
        "one_tile",
        (rows, cols),
        "    t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out[0:128, 0:8], src=t)
",
    )
}
