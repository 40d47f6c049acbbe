128 = tile_rows
