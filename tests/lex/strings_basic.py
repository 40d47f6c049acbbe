# Single- and double-quoted strings with escapes and the other quote inside.
a = 'single'
b = "double"
c = 'it\'s'
d = "say \"hi\""
e = "it's"
f = 'say "hi"'
g = "tab\tnewline\nbackslash\\"
h = "\x41\u00e9\N{GREEK SMALL LETTER ALPHA}"
i = ''
j = ""
l = "ünïcödé 名前"
