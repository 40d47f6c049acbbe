"""Shared set-up of the nkic package's tests: the drop-in namespaces are
active (as `pytest -p nkic.pytest` makes them), so the kernel files under
`tests/kernels/` import `nki` / `neuronxcc.nki` as real NKI code does."""

import os
import sys

import pytest

import nkic

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")

nkic.install()
if KERNELS not in sys.path:
    sys.path.insert(0, KERNELS)


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(0)


def pytest_report_header(config):
    return f"nkic {nkic.__version__}, kernels from {KERNELS}"
