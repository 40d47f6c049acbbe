# Explicit joining with a backslash and implicit joining inside brackets.
total = 1 + \
        2 + \
    3
if a and \
   b:
    pass
call = f(1,
         2,
    3)
items = [
    1,
    2,   # a comment inside brackets
    # a comment-only line inside brackets

    3,
]
mapping = {
    "a": 1,
        "b": 2,
}
nested = (a, [b,
              {c: (d,
e)}])
after = 0
