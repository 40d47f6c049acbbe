if a: x = 1
if a: pass
else: pass
for i in xs: total += i
while running: step()
def short(x): return x * 2
class Marker: pass
with ctx(): work()
try: risky()
except E: pass
finally: done()
if a: x = 1; y = 2
x = 1; y = 2;
def stub(): ...
