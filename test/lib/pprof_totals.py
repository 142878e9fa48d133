#!/usr/bin/env python3
"""Sums the sample values of pprof profiles (gzipped or not) per sample
index, as `go tool pprof -top -unit=ns -sample_index=I FILE...` states its
total: time units in nanoseconds, any other unit as it is. Prints one line
per sample index: the number, then the sample type and unit
("30370000000 cpu/nanoseconds").

The merge tests check every profile profd merges against pprof's merge of
the same files, and its total against this sum. pprof's own -proto merge
drops samples without a location (goroutine and threadcreate profiles
have them), so its total is not the inputs'; `pprof -top FILE...` has the
right one but reads every file again for each sample index, which cost
the suite more CPU than anything else. The sum is checked against pprof
-top's on every profile of the corpus (test/e2e/merge_vs_pprof.sh).

With --cache DIR, each file's sums are kept in DIR by the SHA-1 of its
bytes (rollups_api.sh sums the same files for window after window).

usage: pprof_totals.py [--cache DIR] FILE...   (exit status 1 when a file
is not a pprof profile: a legacy gperftools file, a binary)
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_stacks import fields, packed  # noqa: E402
import gzip  # noqa: E402

# pprof's time units, in nanoseconds.
NS = {"nanoseconds": 1, "nanosecond": 1, "ns": 1,
      "microseconds": 1000, "microsecond": 1000, "us": 1000,
      "milliseconds": 10**6, "millisecond": 10**6, "ms": 10**6,
      "seconds": 10**9, "second": 10**9, "s": 10**9,
      "minutes": 60 * 10**9, "minute": 60 * 10**9,
      "hours": 3600 * 10**9, "hour": 3600 * 10**9}


def signed(v):
    """An int64 field's varint as a signed number."""
    return v - (1 << 64) if v >= 1 << 63 else v


def profile(path):
    """One profile's sample types (name, unit) and per-index sums."""
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    types, sums, strings = [], [], []
    for f, t, v in fields(data):
        if f == 1:	# sample_type
            st = dict((g, x) for g, _, x in fields(v))
            types.append((st.get(1, 0), st.get(2, 0)))
        elif f == 2:	# sample: its values, packed or one a field
            vals = []
            for g, u, x in fields(v):
                if g == 2:
                    vals.extend(signed(y) for y in packed(u, x))
            sums.extend([0] * (len(vals) - len(sums)))
            for i, y in enumerate(vals):
                sums[i] += y
        elif f == 6:	# string_table
            strings.append(v.decode("utf-8", "replace"))
    names = [(strings[a], strings[b]) for a, b in types]
    sums.extend([0] * (len(names) - len(sums)))
    return names, sums


def cached(path, cache):
    """profile(path), kept in cache (a folder, or None) by content."""
    if cache is None:
        return profile(path)
    key = hashlib.sha1(open(path, "rb").read()).hexdigest()
    kept = os.path.join(cache, key[:2], key + ".totals")
    try:
        with open(kept) as f:
            rows = [line.split() for line in f]
        return [tuple(r[0].split("/", 1)) for r in rows], \
            [int(r[1]) for r in rows]
    except (OSError, ValueError, IndexError):
        pass
    names, sums = profile(path)
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    tmp = "%s.%d" % (kept, os.getpid())
    with open(tmp, "w") as f:
        for (name, unit), v in zip(names, sums):
            f.write("%s/%s %d\n" % (name, unit, v))
    os.replace(tmp, kept)
    return names, sums


def main(paths):
    cache = None
    if paths[:1] == ["--cache"]:
        cache, paths = paths[1], paths[2:]
    names, total = None, []
    for p in paths:
        try:
            n, s = cached(p, cache)
        except (ValueError, IndexError, OSError, EOFError) as e:
            sys.exit("%s: not a pprof profile (%s)" % (p, e))
        if not n:
            sys.exit("%s: not a pprof profile (no sample type)" % p)
        if names is None:
            names, total = n, [0] * len(n)
        for i in range(min(len(total), len(s))):
            total[i] += s[i]
    for i, (name, unit) in enumerate(names or []):
        print("%d %s/%s" % (total[i] * NS.get(unit, 1), name, unit))


if __name__ == "__main__":
    main(sys.argv[1:])
