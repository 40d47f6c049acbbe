#!/usr/bin/env python3
"""Differential check of the nkic parser and printer against CPython's own parser.

For every .py file below the given paths that CPython and nkic both accept,
nkic prints the file back (`parse_files --unparse-to`), and CPython must read
the original and the printed text as the same tree (`ast.dump` without
positions). A difference means nkic read the file differently from Python
(precedence, associativity, literal values, string decoding), or printed it
wrongly, even when nkic's own round trip is stable.

Usage: tests/tools/compare_with_cpython.py [--show N] PATH...
Needs python3 (3.11 or newer reads every construct of the corpus) and cargo.
The exit status is 0 only when no file differs.
"""

import argparse
import ast
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--show", type=int, default=5, help="differences to print in full")
    args = parser.parse_args()

    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(repo, "target"))
    subprocess.run(
        ["cargo", "build", "--quiet", "--manifest-path", os.path.join(repo, "Cargo.toml"),
         "-p", "nkic-tests", "--example", "parse_files"],
        check=True,
    )
    tool = os.path.join(target, "debug", "examples", "parse_files")

    with tempfile.TemporaryDirectory() as out_dir:
        # parse_files exits non-zero when some file has diagnostics; those
        # files are simply not compared.
        subprocess.run([tool, "--quiet", "--unparse-to", out_dir, *args.paths],
                       stdout=subprocess.DEVNULL)
        compared = differing = skipped = 0
        for flat in sorted(os.listdir(out_dir)):
            original_path = flat.replace("%2F", "/").replace("%25", "%")
            with open(original_path, encoding="utf-8") as f:
                original = f.read()
            with open(os.path.join(out_dir, flat), encoding="utf-8") as f:
                printed = f.read()
            try:
                expected = ast.dump(ast.parse(original))
            except SyntaxError:
                skipped += 1  # nkic accepts it, this CPython does not (newer syntax)
                continue
            compared += 1
            try:
                got = ast.dump(ast.parse(printed))
            except SyntaxError as err:
                got = f"<printed text does not parse: {err}>"
            if got != expected:
                differing += 1
                print(f"DIFFERS {original_path}")
                if differing <= args.show:
                    show_difference(expected, got)
        print(f"{compared} files compared, {differing} differ, {skipped} skipped")
    return 1 if differing else 0


def show_difference(expected, got):
    """Prints the first place where the two dumps part."""
    at = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b),
              min(len(expected), len(got)))
    start = max(0, at - 200)
    print(f"  CPython reads the original as: ...{expected[start:at + 200]}")
    print(f"  and the printed text as:       ...{got[start:at + 200]}")


if __name__ == "__main__":
    sys.exit(main())
