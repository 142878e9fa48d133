"""gamma: a generator consumed in a loop, 20% of the CPU."""


def gamma_items(n):
    for i in range(n):
        yield str(i) * 3


def gamma():
    total = 0
    for item in gamma_items(400):
        total += len(item)
    return total
