if (n := len(shape)) > 2:
    rank = n
while (chunk := next_chunk()) is not None:
    handle(chunk)
values = [y := 1, y ** 2]
print(total := a + b)
f(x, (y := 2))
found = any((hit := t) for t in tiles)
z = (w := 3) + w
for item in (rest := items[1:]):
    pass


def first_positive(xs):
    return (found := next((x for x in xs if x > 0), None))
