# A comment on the first line.
x = 1  # A trailing comment.
#No space after the hash.
    # An indented comment-only line does not open a block.
y = 2 # comment with "quotes" and 'quotes' and a # second hash

# A comment after a blank line.
def f():
    # A comment inside a block.
    return x  # trailing

# A comment at the end of the file, after the dedent.
