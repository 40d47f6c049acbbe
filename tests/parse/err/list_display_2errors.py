import neuronxcc.nki.language as nl


def shapes(n):
    sizes = [
        128,
        n * ,
        512,
        n 2,
    ]
    return sizes
