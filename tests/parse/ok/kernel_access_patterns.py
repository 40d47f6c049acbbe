import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def strided_views(t_hbm):
    P, F = 128, 256
    src = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    dst = nl.ndarray((P, F // 2), nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((P, F // 2), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=t_hbm[0:P, 0:F])
    evens = src[:, ::2]
    odds = src[:, 1::2]
    last_col = src[:, -1]
    window = src[0:64, 10:F - 10:4]
    everything = src[...]
    first_block = src[0, ...]
    batched = t_hbm[None, :, :]
    pattern = src.ap(pattern=[[F, P], [2, F // 2]], offset=1)
    as_bf16 = src.ap([[2 * F, P], [1, 2 * F]], dtype=nl.bfloat16)
    narrow = src.slice(1, 0, 128, step=2).permute((0, 1))
    folded = src.reshape((P, 2, F // 2)).flatten_dims(1, 2)
    regrouped = src.rearrange(("p", ("a", "b")), ("p", "b", "a"), {"a": 2})
    nisa.tensor_tensor(dst=dst, data1=evens, data2=odds, op=nl.maximum)
    nisa.dma_copy(dst=out, src=dst)
    return out
