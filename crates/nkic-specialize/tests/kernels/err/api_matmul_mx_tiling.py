# expect: E0509
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=bfloat16[32,512]
@nki.jit
def k(a):
    qa = nl.ndarray((32, 128), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    sca = nl.ndarray((4, 128), nl.uint8, buffer=nl.sbuf)
    acc = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=qa, moving=qa, stationary_scale=sca, moving_scale=sca,
                      tile_position=(0, 64), tile_size=(32, 64))
    return a
