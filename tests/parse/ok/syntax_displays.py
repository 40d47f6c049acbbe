empty_list = []
empty_tuple = ()
empty_dict = {}
one_list = [1]
one_tuple = (1,)
bare_tuple = 1, 2
pair = (1, 2)
items = [1, 2, 3,]
nested = [[1, 2], (3, 4), {5, 6}, {"k": 7}]
a_set = {1, 2, 3}
one_set = {x}
a_dict = {"a": 1, "b": 2}
trailing = {"a": 1,}
keys_exprs = {k + 1: v * 2, (1, 2): [3]}
splat_list = [*xs, 1, *ys]
splat_tuple = (*xs, *ys)
splat_set = {*xs, 0}
splat_dict = {**base, "extra": 1, **more}
multi_line = [
    128,
    256,
    512,
]
shapes = {
    "q": (128, 64),
    "k": (128, 64),
}
