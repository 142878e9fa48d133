"""beta: hashing through a C extension (hashlib), 30% of the CPU."""
import hashlib

BLOCK = b"profd" * 800


def beta():
    d = BLOCK
    for _ in range(8):
        d = hashlib.sha256(d).digest() * 125
    return d
