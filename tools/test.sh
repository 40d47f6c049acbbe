#!/usr/bin/env bash
# Every test of nkic: the Rust workspace (cargo test), then the Python
# package (crates/nkic-python) built into a virtual environment with maturin
# and tested with pytest. The first run creates `.venv` (or $NKIC_VENV) from
# the package registry; later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Formatting first, where rustfmt is installed (rustup's default profile has
# it; a toolchain without it skips this check rather than failing).
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all --check
fi
cargo test --workspace --locked
# The interpreter-only simulator (hosts without a Cranelift back end).
cargo test --locked -p nkic-sim --no-default-features --lib
# The simulator's unit tests as users run it (release): its numerics must
# not depend on how the compiler orders float operations (NaN payloads of
# its fast paths against their definitions), and the test profile builds
# the workspace at opt-level 1.
cargo test --locked --release -p nkic-sim --lib
venv="${NKIC_VENV:-$PWD/.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r crates/nkic-python/requirements-test.txt
# maturin builds nkic-python alone. With the features its Cargo.toml pins
# it reuses the test build above; compiling any other nkic crate again means
# the two builds' dependency features drifted apart (minutes of CI time).
log="$(mktemp)"
if ! (cd crates/nkic-python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --locked) >"$log" 2>&1; then
    cat "$log"
    exit 1
fi
if grep -E 'Compiling nkic-' "$log" | grep -v 'nkic-python'; then
    echo "tools/test.sh: maturin rebuilt the crates above instead of reusing 'cargo test';" \
        "align crates/nkic-python/Cargo.toml's feature pins with the workspace" >&2
    exit 1
fi
rm -f "$log"
# The package's output is compared with the command line's (same pipeline).
export NKIC_EXE="${CARGO_TARGET_DIR:-$PWD/target}/debug/nkic"
"$venv/bin/python" -m pytest crates/nkic-python/tests -q -p no:cacheprovider
