import nki
import nki.language as nl
import nki.isa as nisa


# MX scale tiles allocated with the data's 32 partitions (one quadrant):
# the instructions read its first 4 rows, as for the quadrants of wider
# data (nki-library's MXFP4 gate/up projection with I <= 128).
# nkic: args x=bfloat16[32,256] y=bfloat16[32,512]
# nkic: target trn3
@nki.jit
def mx_one_quadrant(x, y):
    xq = nl.ndarray((32, 64), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    xs = nl.ndarray((32, 64), dtype=nl.uint8, buffer=nl.sbuf)
    yq = nl.ndarray((32, 128), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    ys = nl.ndarray((32, 128), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(src=nl.load(x), dst=xq, dst_scale=xs)
    nisa.quantize_mx(src=nl.load(y), dst=yq, dst_scale=ys)
    acc = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=xq, moving=yq, stationary_scale=xs, moving_scale=ys)
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(acc))
    return out
