# expect: E0506
import nki
import nki.language as nl
import nki.isa as nisa


# DMA transposes are new in NeuronCore-v3: `nisa.dma_transpose` has
# `since` trn2 in the instruction table, so trn1 rejects the call.
# nkic: args w=bfloat16[64,128]
# nkic: target trn1
@nki.jit
def dma_transpose_on_trn1(w):
    out = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.shared_hbm)
    wt = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(dst=wt, src=w)
    nl.store(out, wt)
    return out
