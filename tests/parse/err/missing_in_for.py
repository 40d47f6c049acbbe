def loop(n):
    for i range(n):
        pass
