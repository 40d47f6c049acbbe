def setup(t):
    nl.ndarray((128, 512), nl.float32) = t
    return t
