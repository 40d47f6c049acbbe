"""`from nki.isa import constants` names the module of the ISA enums
(nki-library's find_nonzero_indices imports it so)."""
import nki
import nki.language as nl
import nki.isa as nisa
from nki.isa import constants as nisa_constants


# nkic: args a=float32[128,64]
@nki.jit
def import_isa_constants(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a, dge_mode=nisa_constants.dge_mode.hwdge)
    nisa.dma_copy(dst=out, src=t)
    return out
