import nki
import nki.language as nl
import nki.isa as nisa
from cfgpkg.types import Act, Cfg, Level


# nkic: args x=float32[128,64]
# nkic: consts act=Act.SILU cfg=Cfg(eps=1e-6, n=4, act=Act.GELU) d={"a": 1, "b": (2, 3)}
# nkic: consts ops=[nl.add, np.multiply] lvl=cfgpkg.types.Level.HIGH
# nkic: consts pair=[cfgpkg.types.Act.RELU,cfgpkg.extra.Mode.EXACT]
# nkic: consts tile=cfgpkg.types.Tile(rows=128) shp=cfgpkg.types.Shape(2) keyed={Level.LOW: "low", Act.SILU: "silu"}
@nki.jit
def const_exprs(x, act, cfg, d, ops, lvl, tile, shp, keyed, pair):
    print(act is Act.SILU, act == Act.SILU, act != Act.RELU, act.name, act.value)
    print(cfg.eps, cfg.n, cfg.act is Act.GELU, cfg.tags, type(cfg).__name__)
    print(d["b"][1], sorted(d.keys()), isinstance(ops, list), len(ops), ops[0] is nl.add)
    print(lvl is Level.HIGH, lvl > Level.MID, lvl >= 3, lvl < Level.LOW, int(lvl) + 1, lvl.name)
    print(tile.rows, tile.cols, tile == cfgpkg_tile(), shp.size(), keyed[Act.SILU], keyed[Level.LOW])
    print(pair[0] is Act.RELU, pair[1].value)
    out = nl.ndarray((tile.rows, tile.cols), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


def cfgpkg_tile():
    from cfgpkg.types import Tile
    return Tile(128, 64)
