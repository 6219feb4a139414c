import Halcyon
print("stub")
