import nki.language as
import nki.isa as nisa
