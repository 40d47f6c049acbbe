import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl


@nki.compiler.skip_middle_end_transformations
@nki.baremetal(artifacts_dir="/tmp/artifacts", additional_compile_opt="--verbose")
@nki.jit
def allocated_copy(src):
    dst = nl.ndarray(src.shape, src.dtype, buffer=nl.shared_hbm)
    staging = nl.ndarray(
        (2, nl.par_dim(128), 512),
        dtype=src.dtype,
        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)),
    )
    acc = nl.ndarray(
        (nl.par_dim(128), 512),
        dtype=nl.float32,
        buffer=ncc.psum.alloc(lambda idx, pdim_size, fdim_size: (0, 0)),
    )
    for i in nl.affine_range(src.shape[0] // 128):
        staging[i % 2] = nl.load(src[i * 128:(i + 1) * 128, 0:512])
        nl.store(dst[i * 128:(i + 1) * 128, 0:512], value=staging[i % 2])
    return dst
