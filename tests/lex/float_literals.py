# Float literals: fractions, exponents, trailing and leading dots, underscores.
a = 1.0
b = 1.
c = .5
d = 1e10
e = 1E-6
f = 2.5e+3
g = 3.14_15
h = 1_0.0_1e1_0
i = 0.0
j = 00.5
k = 6.02e23
eps = 1e-5
# An attribute on an int needs a space or brackets, so this is a float then a name.
m = 1.e5
