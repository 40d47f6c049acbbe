import os
import tempfile
from tempfile import NamedTemporaryFile

import nki
import nki.language as nl
import nki.isa as nisa
import numpy as np
import scipy.linalg
from scipy.linalg import circulant


# Host NumPy at compile time: arrays built, indexed, converted, saved to
# virtual files and embedded as shared constants.
# nkic: args x=float32[4,4]
@nki.jit
def host_arrays(x):
    c = np.zeros(4)
    c[1] = 1
    c[-1] += 0.5
    assert np.kron(np.eye(2), np.array([[1, 2]])).tolist() == [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0]]
    perm = scipy.linalg.circulant(c).astype(np.float32)
    assert circulant(c).copy().tolist() == perm.tolist()
    assert perm.shape == (4, 4) and perm.ndim == 2 and perm.size == 16
    assert perm[1, 0] == 1.0 and perm[3, 0] == 0.5 and perm.T[0, 1] == 1.0
    assert np.arange(2, 11, 3).tolist() == [2, 5, 8]
    assert np.tile(np.array([1, 2]), (2, 2)).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert np.array([[1.5, -2.5]]).astype(np.int32).tolist() == [[1, -2]]
    assert np.full((2,), 3).tolist() == [3, 3] and np.ones(2).tolist() == [1.0, 1.0]
    assert np.eye(2, 3, k=1).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert np.arange(6).reshape((2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.arange(6).reshape((2, 3)).T.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert np.arange(24).reshape((2, 3, 4)).T[3, 1, 0] == 7
    assert np.tile(np.arange(3), 2).tolist() == [0, 1, 2, 0, 1, 2]
    assert str(np.zeros((2, 1), dtype=np.int32)) == "array([[0], [0]], dtype=int32)"
    assert str(np.zeros((2000, 0))) == "array(..., shape=(2000, 0), dtype=float64)"
    assert np.array([]).dtype == np.float64 and np.array([True]).dtype == np.bool_
    assert len(np.zeros((3, 2))) == 3 and np.array([[2.5]]) and not np.zeros(1)
    with NamedTemporaryFile(suffix=".npy", delete=False) as f:
        np.save(f, perm)
    with tempfile.NamedTemporaryFile(suffix=".npy") as g:
        np.save(g.name, perm)
        assert os.path.exists(g.name)
    assert str(f.name) == "/tmp/nkic-host-1.npy"
    np.save("/tmp/table", np.arange(4, dtype=np.int32).reshape((1, 4)))
    assert np.load("/tmp/table.npy").tolist() == [[0, 1, 2, 3]]
    p = nl.shared_constant(f.name)
    os.remove(f.name)
    t = nl.shared_constant("/tmp/table.npy", dtype=nl.float32)
    out = nl.ndarray((4, 4), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=p)
    nisa.dma_copy(dst=out[0:1, :], src=t)
    return out
