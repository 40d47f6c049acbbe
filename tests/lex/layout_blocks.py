def outer(x):
    if x:

        for i in range(x):
            # comment-only line at a deeper indent
                # and one even deeper
            y = i


    else:
        y = 0
    return y
class K:
    def m(self):
        while True:
            if self:
                break
x = 1
