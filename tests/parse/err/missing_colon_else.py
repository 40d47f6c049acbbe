def pick(flag):
    if flag:
        op = "relu"
    else
        op = "gelu"
    return op
