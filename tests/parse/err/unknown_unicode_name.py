def describe(scale):
    return f"scale {scale} \N{GREEK SMALL LETTER ALPH} applied"
