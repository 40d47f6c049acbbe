x = 1
a = b = c = 0
p, f = 128, 512
(p, f) = shape
[p, f] = shape
p, f, = shape
(single,) = values
first, *middle, last = items
*head, tail = items
(a, b), c = pair, 3
[a, (b, c)] = nested
tile[0] = 1
tile[0, 1:3] = other
tile[...] = 0.0
obj.attr = 5
obj.inner.deep = obj.other
grid[i][j] = grid[j][i]
self.cache[key], self.size = value, len(value)
x = y = tile[0] = obj.attr = None
result = yield_like = f(x)
t = 1,
e = ()
