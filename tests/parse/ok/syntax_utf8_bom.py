import nki
import nki.language as nl


# A file saved with a UTF-8 byte-order mark, as some Windows editors do.
def double(t):
    return nl.multiply(t, 2.0)
