def f(x):
	if x:
		return 1
	return 2


def g(y):
	for i in y:
		pass
	while y:
		y = y[1:]
