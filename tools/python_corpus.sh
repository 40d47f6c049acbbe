#!/usr/bin/env bash
# Runs public NKI test files and tutorial scripts unmodified on the nkic
# Python package (NKI_SIMULATOR=nkic), from local checkouts given on the
# command line (never vendored):
#
#   tools/python_corpus.sh SDK_CHECKOUT [SAMPLES_CHECKOUT]
#
# SDK_CHECKOUT is aws-neuron-sdk (its nki/test per-operation tests run under
# pytest); SAMPLES_CHECKOUT is nki-samples (each tutorial's *_nki_kernels.py
# runs as a script). Uses the .venv that tools/test.sh builds. Not run by CI.
set -uo pipefail
cd "$(dirname "$0")/.."
py="${NKIC_VENV:-$PWD/.venv}/bin/python"
export NKI_SIMULATOR=nkic
if [ -d "${1:-}/nki/test" ]; then
    (cd "$1/nki/test" && "$py" -m pytest -q -p no:cacheprovider -W ignore . | tail -3)
fi
if [ -d "${2:-}/src/nki_samples/tutorials" ]; then
    pass=0; fail=0
    for f in "$2"/src/nki_samples/tutorials/*/*_nki_kernels.py; do
        if (cd "$(dirname "$f")" && timeout 600 "$py" -W ignore "$(basename "$f")" >/dev/null 2>&1); then
            pass=$((pass + 1))
        else
            fail=$((fail + 1)); echo "failed: $f"
        fi
    done
    echo "tutorial scripts: $pass passed, $fail failed"
fi
