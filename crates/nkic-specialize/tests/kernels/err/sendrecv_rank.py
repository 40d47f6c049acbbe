# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# Each core exchanges with the other one: rank 1 sending to itself is an
# error at `send_to_rank` (instance 1).
# nkic: args x=float32[256,64]
# nkic: grid 2
@nki.jit
def k(x):
    out = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    got = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(t, got, send_to_rank=0, recv_from_rank=1 - me, pipe_id=0)
    nl.store(out[me * 128:(me + 1) * 128, :], value=got)
    return out
