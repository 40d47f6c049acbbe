with nl.no_reorder():
    step_one()

with open(path) as handle:
    data = handle.read()

with a as x, b as y:
    pass

with a, b, c:
    pass

with lock() as (first, second):
    pass

with ctx() as obj.attr:
    pass

with nl.no_reorder():
    with nested():
        inner()

with (
    nl.no_reorder() as scope,
    open_trace("copies") as trace,
):
    pass

with (first, second):
    pass

with ((first, second)):
    pass
