def kernel(x):
    for i in range(4):
