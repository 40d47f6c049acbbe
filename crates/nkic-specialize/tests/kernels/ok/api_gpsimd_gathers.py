import nki
import nki.language as nl
import nki.isa as nisa


# GpSimd gathers, segment bounds and nonzero positions.
# nkic: args data=float32[128,64] idx=uint16[128,2] cols=uint32[128,8] seg=int32[1,16]
@nki.jit
def gathers(data, idx, cols, seg):
    out = nl.ndarray((128, 8), nl.float32, buffer=nl.shared_hbm)
    d = nl.load(data)
    i = nl.load(idx)
    c = nl.load(cols)
    s = nl.load(seg)
    g1 = nisa.local_gather(d, i, 2, 24)
    g2 = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.local_gather(dst=g2, src_buffer=d, index=i, num_elem_per_idx=2)
    n1 = nisa.nc_n_gather(data=d, indices=c)
    n2 = nl.gather_flattened(data=d, indices=c, dtype=nl.bfloat16)
    bounds = nisa.sequence_bounds(segment_ids=s)
    nz = nisa.nonzero_with_count(src=d, index_offset=1, padding_val=-7)
    print(g1.shape, n2.dtype, bounds.shape, nz.shape, nz.dtype)
    nl.store(out, n1)
    return out
