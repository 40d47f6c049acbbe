squares = [x * x for x in range(10)]
evens = [x for x in range(10) if x % 2 == 0]
pairs = [(i, j) for i in range(3) for j in range(3) if i != j]
filtered = [x for x in xs if x if x > 0]
unpacked = [a + b for a, b in zip(xs, ys)]
nested = [[i * j for j in range(4)] for i in range(4)]
as_set = {x % 3 for x in xs}
as_dict = {name: shape for name, shape in tensors.items()}
inverse = {v: k for k, v in mapping.items() if v is not None}
conditional = [x if x > 0 else 0 for x in xs]
lambdas = [lambda y, i=i: y + i for i in range(3)]
tiles = [
    nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for _ in range(4)
]
walrus_in = [y for x in xs if (y := f(x)) is not None]
