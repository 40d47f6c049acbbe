def label(i):
    return f"load_{i}
