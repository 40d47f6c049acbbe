# expect: E0210
import nki
from enum import Enum


class Layout(Enum):
    ROW = 0
    COL = 1


# nkic: args x=float32[128,64]
# nkic: consts layout=2
@nki.jit
def k(x, layout):
    mode = Layout(layout)
