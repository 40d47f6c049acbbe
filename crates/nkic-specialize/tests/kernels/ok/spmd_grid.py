import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[512,64]
# nkic: grid 2,2
@nki.jit
def spmd(x):
    i = nl.program_id(0)
    j = nl.program_id(axis=1)
    n = nl.num_programs(1)
    print(f"instance {i},{j} of {nl.num_programs(0)}x{n}, ndim {nl.program_ndim()}")
    block = i * n + j
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[block * 128:(block + 1) * 128, :])
    nisa.dma_copy(dst=x[block * 128:(block + 1) * 128, :], src=t)
