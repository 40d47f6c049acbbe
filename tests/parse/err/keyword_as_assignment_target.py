def setup():
    class = "sbuf"
    return class
