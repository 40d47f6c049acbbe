def f():
    return 1

x = f()