import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_columns(x, factors):
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    data = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=data, src=x)

    def body(i):
        col = data.ap([[F, P], [1, 1]], scalar_offset=i, indirect_dim=1)
        nisa.tensor_scalar(dst=col, data=col, op0=nl.multiply, operand0=factors[0])

    nl.fori_loop(0, F, body, step=1)

    pick = lambda k: nl.relu if k % 2 == 0 else nl.gelu
    apply_twice = lambda f, t: f(f(t))
    keyed = sorted(range(4), key=lambda k: -k)
    ops = [pick(k) for k in keyed]
    no_args = lambda: None
    star_args = lambda *a, **kw: (a, kw)
    default_arg = lambda t, s=1.0: (t, s)

    def countdown(reg):
        nisa.register_move(reg, reg)
        return reg

    nl.while_loop(nisa.register_alloc(3), countdown)
    nisa.dma_copy(dst=out, src=data)
    return out
