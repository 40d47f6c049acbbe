# A 132-bit mask does not fit the 128-bit integers of the compile-time language.
FULL_MASK = 0xF_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF
