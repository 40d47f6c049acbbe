import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather_rows(table, indices):
    """out[p, :] = table[indices[p], :] for 128 partitions."""
    vocab, dim = table.shape
    (n_idx,) = indices.shape
    assert n_idx <= nl.tile_size.pmax
    idx = nl.ndarray((n_idx, 1), nl.int32, buffer=nl.sbuf)
    rows = nl.ndarray((n_idx, dim), table.dtype, buffer=nl.sbuf)
    out = nl.ndarray((n_idx, dim), table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=idx, src=indices.reshape((n_idx, 1)))
    nisa.dma_copy(
        dst=rows,
        src=table.ap([[dim, n_idx], [1, dim]], vector_offset=idx, indirect_dim=0),
        oob_mode=nisa.oob_mode.skip,
    )
    picked = table.vector_select(0, idx)
    cols = rows.indirect(idx, num_elem=n_idx)
    nisa.dma_copy(dst=out, src=rows)
    return out
