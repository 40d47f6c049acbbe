double = lambda x: return x * 2
