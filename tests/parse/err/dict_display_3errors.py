import neuronxcc.nki.language as nl

CONFIG = {
    "tile_p": 128,
    "tile_f" 512,
    "dtype": nl.bfloat16,
    "buffer": ,
    "mode": "fast" "slow": 1,
}
