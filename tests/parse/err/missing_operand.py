def offset(i, stride):
    start = i * stride +
    return start
