# Just a comment, no code.

# Another one.
