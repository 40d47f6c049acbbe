def view(t):
    head = t[0:128, :
    tail = t[128:, :]
    return head, tail
