import nki.isa as nisa


def copy(t, x):
    nisa.dma_copy(t.dst=t, src=x)
