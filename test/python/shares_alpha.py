"""alpha: pure Python arithmetic, 50% of the CPU in pyshares.py."""


def alpha():
    s = 0
    for i in range(2000):
        s += i * i % 7
    return s
