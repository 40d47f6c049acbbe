import nki
import nki.language as nl
import nki.isa as nisa
import nki.compiler as ncc


# A PSUM block tensor much larger than PSUM (16 blocks of 2 KiB per
# partition) is fine: every block is its own tile. Two block dims,
# selecting one block dim at a time, and a no_reorder loop directive.
# nkic: args x=float32[128,512] y=float32[128,2048]
@nki.jit
def blocks(x, y):
    out = nl.ndarray((4, 128, 512), nl.float32, buffer=nl.shared_hbm)
    xs = nl.load(x)
    ys = nl.load(y)
    acc = nl.ndarray((4, 4, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
    for i in nl.sequential_range(4, directives=ncc.no_reorder()):
        row = acc[i]
        for j in nl.affine_range(4):
            row[j, :, :] = nisa.nc_matmul(xs[:, nl.ds(j * 128, 128)], ys[:, nl.ds(i * 512, 512)])
        first = nisa.tensor_copy(acc[i, 0])
        s = nl.add(first, acc[i, 1, 0:128, :])
        nl.store(out[i], s)
    print(acc.shape, acc[1].shape, acc[1, 2].shape, acc.dtype, acc.buffer, acc.ndim, acc.size)
    return out
