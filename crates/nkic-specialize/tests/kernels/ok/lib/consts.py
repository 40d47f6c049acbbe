P = 128
print("consts loaded")
