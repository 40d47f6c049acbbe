# Every operator and delimiter.
a + b - c * d / e // f % g ** h @ i
a << b >> c & d | e ^ ~f
a < b > c <= d >= e == f != g
x = 1
x += 1; x -= 1; x *= 1; x /= 1; x //= 1; x %= 1; x **= 1; x @= m
x <<= 1; x >>= 1; x &= 1; x |= 1; x ^= 1
def f(a: int, *args, **kwargs) -> None: ...
(y := 10)
t[1:2, ::3, ...]
d = {k: v}
obj.attr
-x + +y
