import nki
import nki.language as nl
import nki.isa as nisa
from nki.typing import tensor
import nki.typing as nt


# nkic: args x=float32[128,512]
@nki.jit
def annotated(x: nt.tensor[128, 512]):
    out: tensor[128, 512] = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t: tensor[128, 512] = nl.load(x)
    u: nt.tensor = nisa.activation(op=nl.tanh, data=t)
    nl.store(out, u)
    return out
