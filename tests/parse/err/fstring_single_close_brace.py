def label(x):
    return f"value } {x}"
