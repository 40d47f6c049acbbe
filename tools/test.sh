#!/usr/bin/env bash
# Every test of nkic: the Rust workspace (cargo test), then the Python
# package (crates/nkic-python) built into a virtual environment with maturin
# and tested with pytest. The first run creates `.venv` (or $NKIC_VENV) from
# the package registry; later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
venv="${NKIC_VENV:-$PWD/.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r crates/nkic-python/requirements-test.txt
(cd crates/nkic-python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --locked --quiet)
# The package's output is compared with the command line's (same pipeline).
export NKIC_EXE="${CARGO_TARGET_DIR:-$PWD/target}/debug/nkic"
"$venv/bin/python" -m pytest crates/nkic-python/tests -q -p no:cacheprovider
