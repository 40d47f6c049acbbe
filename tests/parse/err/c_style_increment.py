def count(xs):
    n = 0
    for x in xs:
        n++
    return n
