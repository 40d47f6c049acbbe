import neuronxcc.nki.language as nl


def scaled(a, b, scale):
    out = nl.add(
        nl.multiply(a, scale *),
        nl.matmul(
            a[0:128, (0, 1 2)],
            b[[0, 1], ],
            transpose_x=True,
        ),
        dtype=[nl.float32, nl.bfloat16 nl.int8],
    )
    return out
