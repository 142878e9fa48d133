#!/usr/bin/env python3
"""Writes the merge fuzzer's label-sort bomb seed (test/fuzz/seeds/merge/).

gen_label_bomb.py [NLABELS] > FILE

The fuzz_merge input format is a 4-byte little-endian length n, n bytes of
profile A, then profile B. A here is a gzipped profile with one sample whose
NLABELS (default 60000) numeric labels of one key come in descending order,
the worst case for an insertion sort of labels (quadratic: minutes of CPU);
B is empty. The profile is encoded by hand so no protobuf module is needed.
"""
import gzip
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from retime import put_field as field  # noqa: E402  (the one encoder)
from retime import put_varint as varint  # noqa: E402


def main():
    nlabels = int(sys.argv[1]) if len(sys.argv) > 1 else 60000
    strings = [b"", b"cpu", b"nanoseconds", b"bomb"]
    # Label{key=3 "bomb", num=n}, descending
    labels = b"".join(
        field(3, 2, field(1, 0, 3) + field(3, 0, n))
        for n in range(nlabels, 0, -1))
    sample = field(1, 2, varint(1)) + field(2, 2, varint(1)) + labels
    prof = (field(1, 2, field(1, 0, 1) + field(2, 0, 2))      # sample_type
            + field(2, 2, sample)                              # sample
            + field(4, 2, field(1, 0, 1) + field(3, 0, 0x1000))  # location
            + b"".join(field(6, 2, s) for s in strings))       # string_table
    a = gzip.compress(prof, 9, mtime=0)
    sys.stdout.buffer.write(struct.pack("<I", len(a)) + a)


if __name__ == "__main__":
    main()
