#!/usr/bin/env python3
"""retime.py IN OUT NANOS: writes IN's pprof profile (gzipped or raw) to OUT
with its time_nanos (field 9 of Profile) set to NANOS ("now" for the current
time, "now-8d" / "now+2h" relative to it; 0 removes the field), gzipped if
IN was. Used by tests that need a real profile dated relative to today
(retention and clock-skew checks refuse profiles dated outside them)."""
import gzip
import re
import sys
import time


def varint(b, i):
    """Reads a varint at b[i]; returns (value, next index)."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def put_varint(v):
    """Encodes v (unsigned, < 2**64) as a varint."""
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def put_field(num, wire, payload):
    """One protobuf field: a varint (wire 0) or length-delimited (wire 2)."""
    key = put_varint(num << 3 | wire)
    if wire == 0:
        return key + put_varint(payload)
    return key + put_varint(len(payload)) + payload


def when(arg):
    """NANOS from "now", "now-8d", "now+2h" or a number."""
    m = re.fullmatch(r"now(?:([-+])(\d+)([smhd]))?", arg)
    if not m:
        return int(arg)
    now = time.time_ns()
    if not m.group(1):
        return now
    d = int(m.group(2)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(3)]
    return now + (1 if m.group(1) == "+" else -1) * d * 10**9


def main():
    src, dst, arg = sys.argv[1:4]
    data = open(src, "rb").read()
    gz = data[:2] == b"\x1f\x8b"
    raw = gzip.decompress(data) if gz else data
    out = bytearray()
    i = 0
    while i < len(raw):
        start = i
        key, i = varint(raw, i)
        wt = key & 7
        if wt == 0:
            _, i = varint(raw, i)
        elif wt == 1:
            i += 8
        elif wt == 2:
            n, i = varint(raw, i)
            i += n
        elif wt == 5:
            i += 4
        else:
            sys.exit("retime.py: unsupported wire type %d" % wt)
        if key >> 3 != 9:
            out += raw[start:i]
    t = when(arg)
    if t != 0:
        out += put_varint(9 << 3) + put_varint(t & (2**64 - 1))
    with open(dst, "wb") as f:
        f.write(gzip.compress(bytes(out)) if gz else bytes(out))


if __name__ == "__main__":
    main()
