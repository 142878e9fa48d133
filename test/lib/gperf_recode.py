#!/usr/bin/env python3
"""Re-encodes a legacy gperftools CPU profile written in 64-bit little-endian
words (what CPUPROFILE= writes on x86-64) into another word size and byte
order, as a 32-bit or big-endian machine would have written it: the same
header, records and end record, addresses cut to 32 bits for 32-bit words,
then the maps text unchanged. Usage: gperf_recode.py {32l|32b|64b} IN OUT.
Used by test/e2e/gperf_api.sh to check every variant pprof reads."""
import struct
import sys


def main():
    kind, src, dst = sys.argv[1:4]
    data = open(src, 'rb').read()
    words = []
    at = 0
    # header, then records up to the end record (0, 1, 0)
    header = struct.unpack_from('<5Q', data, 0)
    words.extend(header)
    at = 40
    while at < len(data):
        count, depth = struct.unpack_from('<2Q', data, at)
        addrs = struct.unpack_from('<%dQ' % depth, data, at + 16)
        at += 16 + 8 * depth
        words.extend((count, depth) + addrs)
        if count == 0 and depth == 1 and addrs[0] == 0:
            break
    size = 4 if kind.startswith('32') else 8
    order = '>' if kind.endswith('b') else '<'
    code = 'I' if size == 4 else 'Q'
    mask = (1 << (8 * size)) - 1
    out = b''.join(struct.pack(order + code, w & mask) for w in words)
    open(dst, 'wb').write(out + data[at:])


main()
