"""Each core of an LNC=2 launch embeds constants built on the host: one the
same on both cores, one from `nl.program_id`. Row `p` of the output is
(p + 2) + 1."""
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


# nkic: args x=float32[2,4]
# nkic: grid 2
@nki.jit
def core_constants(x):
    out = nl.ndarray((2, 4), nl.float32, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    same = nl.shared_constant(np.ones((1, 4), dtype=np.float32))
    mine = nl.shared_constant(np.full((1, 4), pid + 2, dtype=np.float32))
    t = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=mine)
    u = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=same)
    s = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=t, data2=u, op=nl.add)
    nisa.dma_copy(dst=out[pid:pid + 1, :], src=s)
    return out
