# expect: E0524
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=r, send_to_rank=1, recv_from_rank=1, pipe_id=0)
