# Integer literals in every base, with digit-group underscores.
zero = 0
decimal = 128
grouped = 1_000_000
hex_lower = 0xff
hex_upper = 0XDEAD_BEEF
octal = 0o755
octal_upper = 0O17
binary = 0b1010_0101
binary_upper = 0B1
many_zeros = 000
big = 340282366920938463463374607431768211455
