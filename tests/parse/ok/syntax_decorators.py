import functools

import nki


@nki.jit
def plain(x):
    return x


@nki.jit(debug=True, platform_target="trn3")
def with_args(x):
    return x


@functools.lru_cache(maxsize=None)
@staticmethod
@registry["kernels"].register
def stacked(x):
    return x


@(lambda f: f)
def parenthesized(x):
    return x


class Holder:
    @property
    def size(self):
        return 128

    @size.setter
    def size(self, value):
        pass

    @classmethod
    def make(cls):
        return cls()
