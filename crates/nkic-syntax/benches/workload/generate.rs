//! The generated kernel file shared by the parse benchmark and the
//! `parse_workload` example, so both measure the same input.

/// One generated kernel function, numbered `i` so that names differ.
fn kernel(i: usize, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(
        out,
        r#"
@nki.jit
def tiled_kernel_{i}(a_in, b_in, scale: float = 1.0, *, mode="fast"):
    """Adds two tensors tile by tile and scales the result (variant {i})."""
    p_size, f_size = a_in.shape
    out = nl.ndarray((p_size, f_size), dtype=a_in.dtype, buffer=nl.shared_hbm)
    n_tiles = (p_size + nl.tile_size.pmax - 1) // nl.tile_size.pmax
    for t in nl.affine_range(n_tiles):
        # Load one tile of each input; rows beyond the end are masked.
        rows = t * nl.tile_size.pmax + nl.arange(nl.tile_size.pmax)[:, None]
        cols = nl.arange(f_size)[None, :]
        a_tile = nl.load(a_in[rows, cols], mask=(rows < p_size))
        b_tile = nl.load(b_in[t * 128:(t + 1) * 128, 0:f_size])
        acc = nl.zeros((128, f_size), dtype=nl.float32, buffer=nl.psum)
        for k in nl.static_range(4):
            acc += nl.matmul(a_tile[:, k * 32:(k + 1) * 32], b_tile[k * 32:(k + 1) * 32, :], transpose_x=True)
        res = nl.multiply(acc, scale) if mode == "fast" else acc * scale ** 2
        if t % 2 == 0 and not (t > 8 or t < -1):
            res = nl.exp(res) - nl.log(res + 1e-6)
        elif t in (1, 3, 5):
            res = -res
        else:
            pass
        nl.store(out[rows, cols], value=res, mask=(rows < p_size))
    assert out.shape == (p_size, f_size), f"bad shape {{out.shape}} in kernel {i}"
    return out

"#
    );
}

/// A kernel file of at least `min_bytes` bytes.
pub fn generate(min_bytes: usize) -> String {
    let mut out = String::from(
        "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport numpy as np\n",
    );
    let mut i = 0;
    while out.len() < min_bytes {
        kernel(i, &mut out);
        i += 1;
    }
    out.push_str("\nif __name__ == \"__main__\":\n    a = np.random.rand(256, 512).astype(np.float32)\n    print(tiled_kernel_0(a, a))\n");
    out
}
