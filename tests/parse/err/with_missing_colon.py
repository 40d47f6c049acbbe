import nki.language as nl


def ordered(a):
    with nl.no_reorder()
        a = a + 1
    return a
