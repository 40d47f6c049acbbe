# expect: E0216
import nki


@nki.jit
def first(x):
    pass


@nki.jit
def second(x):
    pass
