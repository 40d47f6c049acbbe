import nki
import nki.language as nl
import nki.isa as nisa


# `NKIObject.__init__(**kwargs)` sets each keyword as an attribute: a
# subclass with only class attributes is made with keywords, and the
# ones not given keep their class value.
class Section(nl.NKIObject):
    start = None
    size = None
    label = "rows"


# nkic: args x=float32[128,64]
@nki.jit
def nkiobject_kwargs(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    s = Section(start=16, size=32)
    assert s.label == "rows"
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:s.size], src=x[:, s.start:s.start + s.size])
    nisa.dma_copy(dst=out[:, 0:s.size], src=t[:, 0:s.size])
    return out
