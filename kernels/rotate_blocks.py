"""Rotates the rows of x within blocks of 4 by one: out[4b + i] = x[4b + (i + 1) % 4].

The rotation is a TensorE matmul against a constant 128 × 128 permutation
matrix that the kernel builds on the host with NumPy and SciPy while it is
traced, saves to a temporary `.npy` file and embeds with
`nl.shared_constant(path)`, the way production top-k kernels carry their
constants. The matrix is block-diagonal (`np.kron` of an identity with a
`scipy.linalg.circulant` block), so `nc_matmul(stationary=rot, moving=x)`
computes rot.T @ x: row m of the result is the row k of x with
rot[k, m] = 1. Every product is a value times 1 or 0, so the result is exact.

The second output is a constant table of column numbers (int32, one row
per partition) built with np.tile and np.arange and copied to the output
straight from its shared constant.

x is [128, F] float32.
"""
import os
from tempfile import NamedTemporaryFile

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np
from scipy.linalg import circulant

BLOCK = 4


def saved(array):
    """Saves `array` to a temporary .npy file and returns its path."""
    with NamedTemporaryFile(suffix=".npy", delete=False) as f:
        np.save(f, array)
    return f.name


def rotation(block, blocks):
    """The permutation matrix: `blocks` circulant blocks of size `block`."""
    first = np.zeros(block)
    first[1 % block] = 1
    return np.kron(np.eye(blocks), circulant(first)).astype(np.float32)


# nkic: args x=float32[128,64]
@nki.jit
def rotate_blocks(x):
    P, F = x.shape
    path = saved(rotation(BLOCK, P // BLOCK))
    rot_hbm = nl.shared_constant(path)
    assert os.path.exists(path)
    os.remove(path)
    columns = np.tile(np.arange(F).astype(np.int32).reshape((1, F)), (P, 1))

    rot = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rot, src=rot_hbm)
    xt = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=rot, moving=xt)
    res = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)

    idx = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=idx, src=nl.shared_constant(columns))
    return out, idx
