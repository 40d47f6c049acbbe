from typing import Optional, Tuple

import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt


def tile_count(length: int, tile: int = 128) -> int:
    return (length + tile - 1) // tile


def pick_dtype(x: nt.tensor, override: Optional[object] = None) -> object:
    return override if override is not None else x.dtype


@nki.jit
def add_vectors(a: nt.tensor[128, 512], b: nt.tensor[128, 512]) -> nt.tensor[128, 512]:
    shape: Tuple[int, int] = a.shape
    ta: nt.tensor = nl.ndarray(shape, pick_dtype(a), buffer=nl.sbuf)
    tb = nl.ndarray(shape, pick_dtype(b), buffer=nl.sbuf)
    result: nt.tensor[128, 512] = nl.ndarray(shape, a.dtype, buffer=nl.shared_hbm)
    n_tiles: int
    n_tiles = tile_count(shape[1], 512)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
    nisa.dma_copy(dst=result, src=ta)
    return result
