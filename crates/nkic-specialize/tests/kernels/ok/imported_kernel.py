import nki
import nki.language as nl

# kernel: scaled
# The kernel is defined in an imported module and named by its alias, as
# a test file that imports the kernel under test does.

# nkic: args x=float32[128,64]
# nkic: consts factor=2.5
from lib.scale_kernel import scale_rows as scaled
