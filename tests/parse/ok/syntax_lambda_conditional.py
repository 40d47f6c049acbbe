identity = lambda x: x
add = lambda a, b=1: a + b
variadic = lambda *args, **kwargs: len(args) + len(kwargs)
keyword_only = lambda *, key: key
nullary = lambda: 0
nested = lambda x: lambda y: x + y
in_call = sorted(xs, key=lambda t: (t.size, t.name))
choice = a if cond else b
chained = a if c1 else b if c2 else c
in_lambda = lambda x: x if x > 0 else -x
paren_lambda = (lambda: 1)()
cond_of_lambdas = (lambda: 1) if flag else (lambda: 2)
not_cond = not a if b else c
or_cond = a or b if c or d else e and f
