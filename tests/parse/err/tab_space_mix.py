def load(x):
    if x:
	y = x
        z = x
    return y
