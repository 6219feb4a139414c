import Halcyon
print("halcyon")
