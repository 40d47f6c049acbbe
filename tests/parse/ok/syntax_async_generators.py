def tiles(n, step=128):
    for start in range(0, n, step):
        yield start, min(start + step, n)
    yield


def chained(first, second):
    yield from first
    received = yield
    total = (yield received) + 1
    return total


async def fetch(queue):
    async with queue.lock() as held:
        item = await queue.get()
    async for chunk in queue.stream():
        await handle(chunk)
    return [x async for x in queue]
