# Adjacent string literals are concatenated by the parser, not the lexer.
msg = "partition dim " "must be " 'at most 128'
joined = ("first line "
          "second line "
          f"third {x} line")
mixed = r"raw\n" "cooked\n" """triple"""
