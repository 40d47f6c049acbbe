class Empty:
    pass


class WithParens():
    pass


class Tile(NKIObject):
    """A tile description."""

    partitions = 128
    free: int = 512

    def __init__(self, partitions=128, free=512):
        self.partitions = partitions
        self.free = free

    def size(self):
        return self.partitions * self.free

    def __eq__(self, other):
        return self.partitions == other.partitions and self.free == other.free


class Derived(Tile, Mixin, metaclass=Meta):
    def size(self):
        return super().size() * 2


class Outer:
    class Inner(base.Module):
        value = 1

    def method(self):
        return Outer.Inner.value


class Mode(Enum):
    FAST = "fast"
    EXACT = "exact"
