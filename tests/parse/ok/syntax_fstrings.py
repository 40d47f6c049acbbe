name = f"tile_{i}"
two = f"{a}{b}"
text_only = f"no fields"
empty = f""
conv = f"{value!r} and {value!s} and {value!a}"
spec = f"{ratio:.2f} | {count:>6} | {n:#010x} | {pct:.1%}"
nested_spec = f"{x:{width}.{precision}f}"
conv_and_spec = f"{value!r:>20}"
exprs = f"{a + b * c} {xs[0]} {obj.attr.deep} {fn(1, k=2)} {-x}"
call_quotes = f'{d["key"]}'
escaped = f"{{not a field}} {real} }}"
single = f'{x}'
upper = F"{x}"
raw = rf"\d+{x}"
raw2 = Rf"{x}\n"
triple = f"""first {a}
second {b!r}
third {c:>{w}}"""
nested_f = f"{f'{inner}'} outer"
conditional = f"{'on' if flag else 'off'}"
dict_display = f"{ {'a': 1}['a'] }"
lambda_in_parens = f"{(lambda v: v * 2)(x)}"
tuple_field = f"{a, b}"
concat = "plain " f"formatted {x} " 'more'
message = (
    f"partition dim {shape[0]} "
    f"exceeds {nl.tile_size.pmax}"
)
spaces = f"{ x }"
