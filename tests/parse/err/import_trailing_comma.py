import nki.language as nl,
