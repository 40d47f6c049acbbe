"""Type stubs of the native extension (crates/nkic-python/src/lib.rs)."""

from typing import Dict, List, Optional, Tuple

import numpy as np

__version__: str
GRID_MAX: int

class Program:
    nkasm: str
    ir: str
    target: str
    cores: int
    warnings: Tuple[str, List[str]]
    files: List[str]
    prints: List[str]
    returned: List[str]
    written: List[Tuple[int, str]]
    arguments: List[Tuple[str, str, str, List[int]]]
    def run(
        self,
        inputs: Dict[str, np.ndarray],
        *,
        seed: int = 0,
        poison: str = "precise",
        step_order: str = "round-robin",
        trace: bool = False,
        max_sim_ms: int = 100,
        title: str = "kernel",
    ) -> Dict[str, object]: ...  # outputs, warnings, simulated_ns, simulate_wall_ns, report, ...

def compile(
    path: str,
    *,
    kernel: str,
    args: List[Tuple[str, str, List[int]]],
    consts: List[Tuple[str, str]],
    grid: List[int],
    target: Optional[str] = None,
    lnc: Optional[int] = None,
    search_paths: List[str] = ...,
    schedule: str = "optimized",
    precise_fp: bool = True,
    no_spill: bool = False,
    host_files: List[Tuple[str, str, List[int], bytes]] = ...,
) -> Program: ...
def dtype_names() -> List[str]: ...
