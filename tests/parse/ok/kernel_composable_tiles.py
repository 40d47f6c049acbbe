import nki
import nki.isa as nisa
import nki.language as nl


def copy_tile(dst, src):
    nisa.tensor_copy(dst=dst, src=src)


def exp_tile(dst, src):
    nisa.activation(dst=dst, op=nl.exp, data=src)


def add_one_tile(dst, src, amount=1.0):
    nisa.tensor_scalar(dst=dst, data=src, op0=nl.add, operand0=amount)


TILE_FNS = {"copy": copy_tile, "exp": exp_tile, "add_one": add_one_tile}


def for_each_tile(a_input, a_output, tile_fn, *extra, tile_rows=128, **options):
    n_rows, n_cols = a_input.shape
    for r in range(n_rows // tile_rows):
        span = slice(r * tile_rows, (r + 1) * tile_rows)
        t_in = nl.ndarray((tile_rows, n_cols), a_input.dtype, buffer=nl.sbuf)
        t_out = nl.ndarray((tile_rows, n_cols), a_output.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t_in, src=a_input[span])
        tile_fn(t_out, t_in, *extra, **options)
        nisa.dma_copy(dst=a_output[span], src=t_out)


@nki.jit
def pipeline(x, stages=("exp", "add_one")):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    current = x
    for index, stage in enumerate(stages):
        fn = TILE_FNS[stage]
        scratch = out if index == len(stages) - 1 else nl.ndarray(x.shape, x.dtype, buffer=nl.hbm)
        kwargs = {"amount": 2.0} if stage == "add_one" else {}
        for_each_tile(current, scratch, fn, **kwargs)
        current = scratch
    return out
