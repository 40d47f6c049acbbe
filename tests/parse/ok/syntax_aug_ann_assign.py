n = 0
n += 1
n -= 2
n *= 3
n /= 4
n //= 5
n %= 6
n **= 2
m @= w
bits <<= 1
bits >>= 2
bits &= 0xFF
bits |= 0b1
bits ^= mask
tile[0] += 1.0
obj.count += 1
psum[...] += product
total += a * b + c

size: int
size: int = 128
ratio: float = 0.5
names: list[str] = []
table: dict[str, int] = {"a": 1}
shape: tuple[int, ...] = (128, 512)
self_like.attr: int = 3
cache[key]: object = None
maybe: "ForwardRef" = None
