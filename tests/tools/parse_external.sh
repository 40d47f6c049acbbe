#!/usr/bin/env bash
# Runs the nkic parser over every .py file in the given directories (or files)
# and prints the files that produce diagnostics, with the rendered diagnostics.
#
# Usage: tests/tools/parse_external.sh [--quiet] DIR...
# The exit status is 0 only when every file parsed without diagnostics.
# CARGO_TARGET_DIR is honoured; the build is the dev profile of the
# `parse_files` example of the nkic-tests package.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 [--quiet] DIR..." >&2
    exit 2
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cargo build --quiet --manifest-path "$repo_root/Cargo.toml" -p nkic-tests --example parse_files
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
exec "$target_dir/debug/examples/parse_files" "$@"
