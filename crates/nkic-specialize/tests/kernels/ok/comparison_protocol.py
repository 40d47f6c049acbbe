import nki
import nki.language as nl
import nki.isa as nisa

class Always:
    def __eq__(self, other):
        return "eq-called"


class Never:
    def __eq__(self, other):
        return NotImplemented


class Money:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        if isinstance(other, Money):
            return self.v == other.v
        if isinstance(other, int):
            return self.v == other
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, Money):
            return self.v < other.v
        return NotImplemented

    def __le__(self, other):
        return NotImplemented


class Ne:
    def __init__(self, v):
        self.v = v

    def __ne__(self, other):
        return "ne-called"


class Plain:
    pass


def protocol():
    a, b = Money(1), Money(2)
    n, p = Never(), Plain()
    out = []
    out.append(a == Money(1))
    out.append(a != Money(1))
    out.append(Always() == 3)
    out.append(3 == Always())
    out.append(Always() != 3)
    out.append(n == n)
    out.append(n == Never())
    out.append(n != Never())
    out.append(a < b)
    out.append(b > a)
    out.append(a == 1)
    out.append(1 == a)
    out.append(Ne(1) != Ne(1))
    out.append(Ne(1) == Ne(1))
    out.append(Money(2) in [a, b])
    out.append(2 in [a, b])
    out.append([a, b].index(Money(2)))
    out.append([a, b, Money(2)].count(b))
    out.append([a, 3] == [Money(1), 3])
    out.append((a,) == (Money(2),))
    out.append({"k": a} == {"k": Money(1)})
    out.append(p == p)
    out.append(p == Plain())
    x = (1, 2)
    y = (1, 2)
    out.append(x is y)
    z = (1, (2, "s"))
    out.append(z is (1, (2, "s")))
    out.append(None == None)
    out.append(p != None)
    out.append(None == a)
    out.append(NotImplemented is NotImplemented)
    return out


# nkic: args x=float32[128,64] bias=float32[128,64]
@nki.jit
def comparison_protocol(x, bias, scale=None):
    print(*protocol())
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    print(t != None, t == None, None != t, x == None, scale == None, t is not None)
    nisa.dma_copy(dst=t, src=x)
    if bias != None:
        b = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=bias)
        nisa.tensor_tensor(dst=t, data1=t, data2=b, op=nl.add)
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
