def kernel(x):
    """Loads x in tiles of 128 rows.

    The docstring is never closed, so the rest of the file is swallowed.
    return x
