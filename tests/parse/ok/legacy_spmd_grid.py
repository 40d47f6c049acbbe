import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def grid_add(a, b):
    pid_x = nl.program_id(axis=0)
    pid_y = nl.program_id(axis=1)
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    row0 = pid_x * 128
    col0 = pid_y * 512
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    ta = nl.load(a[row0 + i_p, col0 + i_f])
    tb = nl.load(b[row0 + i_p, col0 + i_f])
    nl.store(out[row0 + i_p, col0 + i_f], value=nl.add(ta, tb))
    return out


def run_grids(a, b):
    serial = grid_add[4, 2](a, b)
    spread = grid_add[nl.nc(2) * 2, 2](a, b)
    spmd = grid_add[nl.spmd_dim(4, nl.nc(2)), 2](a, b)
    return np.array_equal(serial, spread) and np.array_equal(serial, spmd)
