if a:
    x = 1

if a:
    x = 1
else:
    x = 2

if a:
    x = 1
elif b:
    x = 2
elif c and d:
    x = 3
else:
    x = 4

if a:
    if b:
        x = 1
    else:
        x = 2
elif not c:
    pass

if a: x = 1
elif b: x = 2
else: x = 3

if (a
        and b):
    pass
