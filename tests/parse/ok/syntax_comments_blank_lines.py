# Leading comment.

# Another after a blank line.


def f(x):  # trailing comment on the def line
    # comment as the first line of a block

    y = x  # trailing comment

        # over-indented comment-only line is ignored
    # under-indented comment-only line is ignored too
    return y
    # comment after the last statement of the block


# comment between top-level statements
z = f(1)
   
	
# The two lines above hold only spaces and only a tab.
