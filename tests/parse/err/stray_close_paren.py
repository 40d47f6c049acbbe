def shape_of(x):
    rows = len(x))
    return rows
