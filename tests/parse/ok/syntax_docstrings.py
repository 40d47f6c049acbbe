"""Module docstring.

It spans several lines and mentions `nl.ndarray` with "quotes".
"""


def documented(x):
    """One-line docstring."""
    return x


def multi(x):
    '''
    Docstring in single quotes,
    indented, with a trailing blank line.

    '''
    return x


class Documented:
    r"""Raw docstring with \n kept verbatim."""

    def method(self):
        "A plain string as the docstring."
        pass
