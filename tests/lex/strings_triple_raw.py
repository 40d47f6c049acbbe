"""Module docstring spanning
several lines, with 'quotes' and "quotes" inside."""

doc = '''single-quoted triple
string with a blank line

inside'''
raw = r"C:\path\to\kernel"
raw_single = r'\d+\.\d+'
raw_upper = R"\n stays two characters"
raw_triple = r"""raw \n
triple"""
escaped_quote = """a ""quoted"" word and a \""" inside"""
empty_triple = """"""
