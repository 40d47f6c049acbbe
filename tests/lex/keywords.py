# Every keyword appears at least once; soft keywords such as match stay names.
import nki.language as nl
from nki import isa as nisa
global g
nonlocal n
def f(a, *, b=None): return a if b is not None else b
class C: pass
if a and not b or c: pass
elif a in b: pass
else: pass
for i in x: break
while True: continue
with ctx as c: del c
try: raise E from None
except E: pass
finally: pass
assert lambda: yield_value, "message"
async_name = await_name = match = case = type = 0
x = [True, False, None]
async def gen(): await other(); yield value
