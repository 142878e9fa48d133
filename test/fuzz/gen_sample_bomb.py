#!/usr/bin/env python3
"""Writes the tiny-sample bomb: a gzipped pprof profile that inflates to
five bytes per sample and is nothing but samples.

gen_sample_bomb.py [--fuzz] [NSAMPLES] > FILE

The profile has one sample type (samples/count) and NSAMPLES (default
20000000) samples of value 1 with no locations and no labels: every sample
is the same stack, so a merge needs memory for one, while a decoder that
builds an object per sample needs about 28 times the inflated size (issue
#11: 20M samples, a 145 KB upload, took 2.76 GB to merge). Each sample is
the 5 bytes 12 03 12 01 01, so 20M samples inflate to 100 MB; the gzip
stream is written a chunk at a time, so the generator itself stays small.

--fuzz writes the merge fuzzer's input format instead (test/fuzz/seeds/
merge/): a 4-byte little-endian length n, n bytes of profile A (the bomb),
then profile B (empty). The profile is encoded by hand, like
gen_label_bomb.py's, so no protobuf module is needed.
"""
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from retime import put_field as field  # noqa: E402  (the one encoder)
from retime import put_varint as varint  # noqa: E402


def bomb(nsamples):
    """The gzipped bomb as bytes, built a chunk of samples at a time."""
    strings = [b"", b"samples", b"count"]
    head = (field(1, 2, field(1, 0, 1) + field(2, 0, 2))     # sample_type
            + b"".join(field(6, 2, s) for s in strings))     # string_table
    sample = field(2, 2, field(2, 2, varint(1)))   # Sample{value: [1]}
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    out = [z.compress(head)]
    chunk = sample * 65536
    left = nsamples
    while left > 0:
        n = min(left, 65536)
        out.append(z.compress(chunk if n == 65536 else sample * n))
        left -= n
    out.append(z.flush())
    return b"".join(out)


def main():
    args = sys.argv[1:]
    fuzz = "--fuzz" in args
    args = [a for a in args if a != "--fuzz"]
    nsamples = int(args[0]) if args else 20000000
    a = bomb(nsamples)
    if fuzz:
        a = struct.pack("<I", len(a)) + a
    sys.stdout.buffer.write(a)


if __name__ == "__main__":
    main()
