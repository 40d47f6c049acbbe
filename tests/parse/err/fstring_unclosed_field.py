def label(i, shape):
    return f"tile {i} has shape {shape[0]x{shape[1]}"
