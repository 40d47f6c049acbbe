import nki
import nki.language as nl
import nki.isa as nisa


# The caller passes the output in and the kernel returns it (an output
# aliasing an input, as `must_alias_input` tests do): `q_out` is an
# inout argument and also output 1.
# nkic: args q=float32[128,64] q_out=float32[128,64]
@nki.jit
def return_argument_alias(q, q_out):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=q)
    nisa.activation(dst=t, op=nl.exp, data=t)
    nisa.dma_copy(dst=q_out, src=t)
    total = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=total, src=t)
    return total, q_out
