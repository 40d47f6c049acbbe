import nki
import nki.language as nl
import nki.isa as nisa


# Quadrant shuffles (reverse, and broadcasting partition 0 to 32 rows) and
# the trn3 three-stage activation with a running max.
# nkic: args x=bfloat16[128,64]
@nki.jit
def shuffles(x):
    out = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=[31 - i for i in range(32)])
    b = nl.ndarray((32, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(src=t[0:1, :], dst=b, shuffle_mask=[0] * 32)
    nisa.nc_stream_shuffle(src=t[32:64, :], dst=b, shuffle_mask=[255] * 16 + list(range(16)))
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    mx = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.activate2(dst=a, op=nl.exp, data=t, op0=nl.multiply, imm0=0.5, op1=nl.subtract,
                   imm1=1.0, reduce_op=nl.maximum, reduce_res=mx)
    g = nisa.activate2(op=nl.gelu, data=t, op0=nl.add, imm0=mx, reverse0=True)
    print(g.shape, g.dtype)
    nl.store(out, r)
    return out
