class TileConfig(NKIObject)
    rows: int = 128
