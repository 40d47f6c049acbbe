a = x < y
b = x <= y < z
c = x == y != z
d = x in items
e = x not in items
f = x is None
g = x is not None
h = 0 <= i < n <= limit
i = a < b > c >= d <= e == f != g
j = x not in ys and y in xs
k = not x in ys
l = (x is y) is not z
m = a == (b == c)
