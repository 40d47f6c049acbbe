# Python 3.12 f-strings: a replacement field may contain strings that use the
# same quote as the f-string itself, after an operator, a keyword or a bracket.
config = {"name": "tile", "size": 128}
sizes = [128, 512]
width = 12
verbose = True

label = f"{config["name"]}"
mode = f"{"debug" if verbose else "quiet"}"
joined = f"{", ".join(str(s) for s in sizes)}"
padded = f"{config["size"]:>{width}}"
aligned = f"{config["name"]:{"<" if verbose else ">"}20}"
fallback = f"{config.get("dtype") or "float32"}"
nested = f"{f"{sizes[0]}" + f"{config["name"]}"}"
member = f"{"t" in config["name"]}"
mixed = f"{sizes!r}" "{literal}" f'{config['size']}'
