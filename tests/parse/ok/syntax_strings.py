a = 'single'
b = "double"
c = '''triple single'''
d = """triple double"""
e = r"raw \n"
f = R'raw \t'
g = "escapes \n \t \\ \" \x41 \u00e9"
h = 'mixed "quotes"'
i = "it's"
j = "one " "two " 'three'
k = ("implicit "
     "concatenation "
     "across lines")
l = """multi
line
string"""
m = r"""raw
triple"""
n = "ünïcödé ✓ 名前"
o = ''
p = "" ""
