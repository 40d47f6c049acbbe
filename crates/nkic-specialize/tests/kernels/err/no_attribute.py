# expect: E0205
import nki


class Cfg:
    def __init__(self):
        self.tile = 128


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    c = Cfg()
    print(c.tiles)
