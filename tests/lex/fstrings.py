# f-strings with nested expressions, conversions and format specs.
name = f"tile_{i}"
shape = f"{P}x{F}"
conv = f"{value!r} {value!s} {value!a}"
spec = f"{ratio:.3f} {count:>8} {n:08x}"
nested_spec = f"{x:{width}.{precision}}"
expr = f"{a + b * c} {xs[0]} {obj.attr} {fn(1, k=2)}"
quotes = f'{d["key"]}'
braces = f"{{literal}} {value} }}"
upper = F"{1}"
raw_f = rf"\d{n}"
raw_f2 = fR"{n}\t"
triple_f = f"""multi
{line} line"""
nested_f = f"{f'{inner}'}"
dict_in = f"{ {'a': 1}['a'] }"
ternary = f"{'yes' if ok else 'no'}"
debug_eq = f"{x=}"
