def ready(a, b):
    if a == 1 and:
        return True
    return False
