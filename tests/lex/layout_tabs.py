def f(x):
	if x:
		return 1
	return 2

def g():
        return 3

def h():
	pass
