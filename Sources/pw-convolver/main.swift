import ConvolverNode
print("pw-convolver")
