for i in range(10):
    total = i

for i, j in pairs:
    pass

for (i, j) in pairs:
    pass

for [k, v] in items:
    pass

for i, in singles:
    pass

for tile in tiles:
    if tile is None:
        continue
    if tile == target:
        break
else:
    tile = None

for a, *rest in rows:
    pass

for obj.attr in values:
    pass

for xs[0] in values:
    pass

for x in 1, 2, 3:
    pass

while n > 0:
    n -= 1

while True:
    if done():
        break
else:
    unreachable()

while queue:
    item = queue.pop()
    if not item:
        continue
    process(item)
