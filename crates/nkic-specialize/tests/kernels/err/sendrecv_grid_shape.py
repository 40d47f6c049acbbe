# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# A grid of two instances that is not `grid 2` runs on one core, so there
# is no other core to exchange with.
# nkic: args x=float32[256,64]
# nkic: grid 1,2
@nki.jit
def k(x):
    me = nl.program_id(1)
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    got = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=got, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
