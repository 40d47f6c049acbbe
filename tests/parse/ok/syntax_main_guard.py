import numpy as np


def reference(x):
    return np.maximum(x, 0)


def main(argv=None):
    x = np.arange(-4, 4, dtype=np.float32).reshape(2, 4)
    print(reference(x))
    return 0


if __name__ == "__main__":
    import sys
    raise SystemExit(main(sys.argv[1:]))
