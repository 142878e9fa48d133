# A CPU loop in Python for the host agent's tests (seconds in argv[1]).
import sys
import time


def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


end = time.time() + float(sys.argv[1])
while time.time() < end:
    hot(100000)
