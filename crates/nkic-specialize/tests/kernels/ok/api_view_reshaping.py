import nki
import nki.language as nl
import nki.isa as nisa


# Zero-cost reshaping views: split a dim, merge dims, einops-style
# rearrange on HBM and on chip, and a per-partition row gather.
# nkic: args x=float32[8,128,64] table=float32[1024,64] rows=int32[128,1]
@nki.jit
def reshaping(x, table, rows):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    g = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    flat = x.flatten_dims(0, 1)
    print(flat.shape, flat.strides)
    split = x.reshape_dim(2, (4, -1))
    print(split.shape, split.strides)
    hw = x.rearrange(('b', 'p', ('h', 'w')), ('p', 'b', 'w', 'h'), {'h': 4})
    print(hw.shape, hw.strides)
    t = nl.ndarray((128, 8, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.rearrange(('b', 'p', 'f'), ('p', 'b', 'f')))
    merged = t.rearrange(('p', 'b', 'f'), ('p', ('b', 'f')))
    print(merged.shape)
    nisa.dma_copy(dst=out, src=merged)
    idx = nl.load(rows)
    nisa.dma_copy(dst=g, src=table.vector_select(0, idx))
    return out
