def no_params():
    pass


def positional(a, b, c):
    return a


def defaults(a, b=1, c="two", d=(3, 4)):
    return b


def keyword_only(a, *, scale=1.0, bias):
    return a


def var_args(*args):
    return args


def var_kwargs(**kwargs):
    return kwargs


def everything(a, b=2, *rest, key, other=None, **options):
    return (a, b, rest, key, other, options)


def annotated(x: int, y: float = 0.5, *names: str, flag: bool = False, **extra: object) -> tuple:
    return x, y


def trailing_comma(
    first,
    second,
):
    return first


def star_then_kwargs(*, only, **kw,):
    return only


def returns_none() -> None:
    return


def returns_subscript(t) -> dict[str, list[int]]:
    return {}


def nested_def(outer):
    def inner(value=outer * 2):
        def innermost():
            return value
        return innermost
    return inner
