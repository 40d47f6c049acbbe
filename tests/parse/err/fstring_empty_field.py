def label(i):
    return f"tile {} of {i}"
