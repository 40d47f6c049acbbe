"""Kernels in the NKI 0.3 dialect (`import nki`) for the package's tests."""
import nki
import nki.isa as nisa
import nki.language as nl

from kconfig import Act, Constants, Scaling


@nki.jit
def add(a, b):
    """out = a + b for [R, C] tensors, R a multiple of 128."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    P = nl.tile_size.pmax
    for i in nl.affine_range(rows // P):
        a_t = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_t = nl.ndarray((P, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_t, src=a[nl.ds(i * P, P), :])
        nisa.dma_copy(dst=b_t, src=b[nl.ds(i * P, P), :])
        s = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=a_t, data2=b_t, op=nl.add)
        nisa.dma_copy(dst=out[nl.ds(i * P, P), :], src=s)
    return out


@nki.jit
def scaled(a, factor, op, offsets, names, flags):
    """out = op(a * factor, offsets[names[0]]) when flags[0] else a * factor."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    if flags[0]:
        nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=factor, op1=op, operand1=offsets[names[0]])
    else:
        nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def configured(a, act, cfg, dt):
    """out = act(a * cfg.scale + cfg.shift) in dtype dt (act is an enum)."""
    out = nl.ndarray(a.shape, dtype=dt, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    r = nl.ndarray(a.shape, dtype=dt, buffer=nl.sbuf)
    if act == Act.RELU:
        fn = nl.relu
    else:
        fn = nl.copy
    nisa.activation(dst=r, op=fn, data=t, scale=cfg.scale, bias=None)
    s = nl.ndarray(a.shape, dtype=dt, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=s, data=r, op0=nl.add, operand0=cfg.shift)
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def accumulate_into(acc, x):
    """acc += x, in place: the kernel writes its argument and returns nothing."""
    a_t = nl.ndarray(acc.shape, dtype=acc.dtype, buffer=nl.sbuf)
    x_t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_t, src=acc)
    nisa.dma_copy(dst=x_t, src=x)
    s = nl.ndarray(acc.shape, dtype=acc.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=a_t, data2=x_t, op=nl.add)
    nisa.dma_copy(dst=acc, src=s)


@nki.jit
def halves(a):
    """Two program instances, one per half of the rows (LNC=2 for a grid of 2)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    half = rows // 2
    pid = nl.program_id(0)
    t = nl.ndarray((half, cols), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(pid * half, half), :])
    r = nl.ndarray((half, cols), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out[nl.ds(pid * half, half), :], src=r)
    return out


@nki.jit
def too_wide(a):
    """A tile of 256 partitions: a compile error (E05xx) at the allocation."""
    t = nl.ndarray((256, 4), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return a


@nki.jit
def gather_rows(table, idx):
    """out[i, :] = table[idx[i], :] through an indirect DMA; an index past
    the table's rows is an out-of-bounds fault at run time."""
    n = idx.shape[0]
    out = nl.ndarray((n, table.shape[1]), dtype=table.dtype, buffer=nl.shared_hbm)
    i_t = nl.ndarray((n, 1), dtype=idx.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=i_t, src=idx)
    rows = nl.ndarray((n, table.shape[1]), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap([[table.shape[1], n], [1, table.shape[1]]], vector_offset=i_t, indirect_dim=0))
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def half_written(a):
    """Stores only the first half of the rows of its output."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    half = a.shape[0] // 2
    t = nl.ndarray((half, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[0:half, :])
    nisa.dma_copy(dst=out[0:half, :], src=t)
    return out


@nki.jit
def printing(a, n):
    print(f"n is {n}")
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out


Scaling = Scaling


@nki.jit
def add_constant(a, consts: Constants):
    """out = a + the array saved at consts.files["bias"] (same shape),
    embedded with nl.shared_constant(path)."""
    c = nl.shared_constant(consts.files["bias"], dtype=a.dtype)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=c)
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=t, data2=u, op=nl.add)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def matmul(a_t, b):
    """a_t.T @ b in float32 for a_t [K, M], b [K, N]: K, M multiples of
    128, N at most 512. Each `nc_matmul` (128 × 128 × N multiply-adds) is
    large enough to be summed on the pool while the run goes on."""
    K, M = a_t.shape
    _, N = b.shape
    P = nl.tile_size.pmax
    c = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // P):
        acc = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.psum)
        for ki in nl.affine_range(K // P):
            lt = nl.ndarray((P, P), dtype=a_t.dtype, buffer=nl.sbuf)
            rt = nl.ndarray((P, N), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=lt, src=a_t[nl.ds(ki * P, P), nl.ds(mi * P, P)])
            nisa.dma_copy(dst=rt, src=b[nl.ds(ki * P, P), :])
            nisa.nc_matmul(dst=acc, stationary=lt, moving=rt)
        out = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=out, src=acc)
        nisa.dma_copy(dst=c[nl.ds(mi * P, P), :], src=out)
    return c
