# `\N{...}` escapes name a character; names are case-insensitive.
header = "\N{GREEK SMALL LETTER ALPHA} = 0.5, \N{greek small letter beta} = 2"
shape = f"128 \N{MULTIPLICATION SIGN} {512}"
arrow = "hbm \N{RIGHTWARDS ARROW} sbuf\N{LINE FEED}"
tolerance = "\N{PLUS-MINUS SIGN}1e-3" "\N{DEGREE SIGN}"
raw = r"\N{NOT A NAME}"
data = b"\N{NOT A NAME}"
