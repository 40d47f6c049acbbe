import nki


@nki.jit
x = 1
