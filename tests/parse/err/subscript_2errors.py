import neuronxcc.nki.language as nl


def copy_tile(src, dst, p, f):
    nl.store(
        dst[p * 128:(p + 1) * 128,
            f +],
        value=nl.load(src[p * 128:(p + 1) * 128 128,
                          f]),
    )
