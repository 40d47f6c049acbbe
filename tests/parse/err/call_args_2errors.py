import neuronxcc.nki.language as nl


def load_tile(src, p, f):
    tile = nl.load(
        src[p, f],
        dtype=nl.float32 +,
        mask=(p < 128),
        buffer=nl.sbuf nl.psum,
    )
    return tile
