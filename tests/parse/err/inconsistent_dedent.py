def softmax(x):
    if x:
        y = x
      z = y
    return z
