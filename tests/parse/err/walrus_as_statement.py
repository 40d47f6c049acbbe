def setup():
    n := 128
    return n
