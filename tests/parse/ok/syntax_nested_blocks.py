def level0(a):
    for i in range(a):
        if i:
            while i:
                with ctx():
                    try:
                        if i > 2:
                            for j in range(i):
                                i -= j
                    except E:
                        pass
    return a
x = 0
class C:
    def m(self):
        if self:
            return 1
    def n(self):
        return 2
y = 1
