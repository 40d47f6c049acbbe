import nki
import nki.language as nl
import nki.isa as nisa
import nki.compiler as ncc


def rotating(idx, pdim_size, fdim_size):
    return (0, idx[0] * 1024)


# Legacy direct allocation: nkic places every tensor itself, so the
# allocation calls are the plain buffers, and the pass decorator returns
# the function.
# nkic: args a=float32[128,512]
@nki.jit
@ncc.skip_middle_end_transformations
def allocated(a):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 512), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    u = nl.ndarray((128, 512), nl.float32, buffer=ncc.sbuf.alloc(rotating))
    v = nl.ndarray((128, 512), nl.float32, buffer=ncc.sbuf.auto_alloc())
    p = nl.ndarray((128, 512), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
    q = nl.ndarray((128, 512), nl.float32, buffer=ncc.psum.alloc(rotating))
    r = nl.ndarray((128, 512), nl.float32, buffer=ncc.psum.auto_alloc())
    nisa.dma_copy(dst=t[0], src=a)
    nisa.tensor_copy(dst=p, src=t[0])
    nisa.tensor_copy(dst=u, src=p)
    print(t.shape, u.buffer, p.buffer, q.buffer, r.buffer, v.buffer)
    nisa.dma_copy(dst=out, src=u)
    return out
