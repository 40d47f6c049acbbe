# Names: ASCII, underscores, digits after the first character, and Unicode letters.
x = 1
_private = 2
__dunder__ = 3
tile_128 = 4
CamelCase = 5
α = 0.5
β_scale = α * 2
Δt = 1e-3
naïve = True
größe = 128
名前 = "tile"
ŝ1 = ŝ0 = None
