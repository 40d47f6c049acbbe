raw_bytes = rb"\“d+"
