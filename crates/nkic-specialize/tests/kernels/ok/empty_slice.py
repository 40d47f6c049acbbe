import nki
import nki.language as nl
import nki.isa as nisa


# Rows split between two cores, the last core taking the remainder: with 1
# row, core 0's share is `nl.ds(0, 0)`, an empty slice. Ops whose access is
# empty do nothing, so core 0 records no op on it; `x[1:1]` is empty too.
# `depends_on` passes through an unrecorded instruction: on core 1 the store
# depends on the load.
# nkic: args x=float32[1,64]
# nkic: grid 2
@nki.jit
def empty_slice(x):
    out = nl.ndarray((1, 64), nl.float32, buffer=nl.shared_hbm)
    n = x.shape[0]
    cores = nl.num_programs(0)
    core = nl.program_id(0)
    per_core = n // cores
    start = core * per_core
    if core == cores - 1:
        rows = n - start
    else:
        rows = per_core
    mine = nl.ds(start, rows)
    t = nl.ndarray((1, 64), nl.float32, buffer=nl.sbuf)
    load = nisa.dma_copy(dst=t[0:rows, :], src=x[mine, :])
    empty = nisa.dma_copy(dst=out[1:1, :], src=t[1:1, :])
    empty.depends_on(load)
    store = nisa.dma_copy(dst=out[mine, :], src=t[0:rows, :])
    store.depends_on(empty)
    return out
