"""The legacy ``neuronxcc`` package as nkic provides it: ``neuronxcc.nki``
is ``nki`` (``jit``, ``baremetal``, ``simulate_kernel``, ``benchmark``,
``profile``, ``language``, ``isa``, ``typing``)."""

from .. import nki

__all__ = ["nki"]
