"""``pytest -p nkic.pytest``: runs a test suite's NKI kernels on nkic by
activating the drop-in ``nki``/``neuronxcc.nki`` namespaces before the
test modules are imported."""

from __future__ import annotations

from ._install import install

install()
