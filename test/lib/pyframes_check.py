#!/usr/bin/env python3
"""Sums up the Python frames of pprof profiles (from test/python/
pyshares.py) as one JSON object, for the agents' Python-frame tests:

  samples    samples read (first value)
  shares     {fn: share of the samples holding any --share function (any
             --fn function without --share), that hold fn} for each
             --fn NAME (a frame named exactly NAME); --share NAME is also
             a --fn
  where      {fn: ["file:line", ...]} the files (base names) and lines of
             fn's locations
  callers    {fn: {caller: share of fn's samples}} the frame right
             rootward of fn
  below      {fn: share of fn's samples with a native frame (not in the
             "[python]" mapping) leafward of it}
  below_maps {fn: [mapping base names of those native leaf frames]}
  chain      {fn: the most frequent run of Python frames from fn to the
             root, as names}
  python_map whether a mapping named "[python]" holds the Python frames
  eval_left  share of samples still holding _PyEval_EvalFrameDefault

usage: pyframes_check.py [--share NAME]... --fn NAME... FILE...
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_stacks import read  # noqa: E402


def main(argv):
    fns, share, files, i = [], [], [], 0
    while i < len(argv):
        if argv[i] in ("--fn", "--share"):
            fns.append(argv[i + 1])
            if argv[i] == "--share":
                share.append(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    total = anyfn = eval_left = 0
    with_fn = {f: 0 for f in fns}
    where = {f: set() for f in fns}
    callers = {f: {} for f in fns}
    below = {f: 0 for f in fns}
    below_maps = {f: set() for f in fns}
    chains = {f: {} for f in fns}
    python_map = False
    for path in files:
        p = read(path)
        s = p["strings"]
        pymaps = set(m for m, v in p["map"].items() if s[v[2]] == "[python]")
        python_map = python_map or bool(pymaps)
        for locs, vals, _ in p["samples"]:
            n = vals[0] if vals else 0
            total += n
            frames = []   # (name, file:line, is_python, mapping base)
            for lid in locs:
                loc = p["loc"].get(lid, {"fns": [], "lines": [],
                                         "mapping": 0, "address": 0})
                m = p["map"].get(loc["mapping"])
                base = s[m[2]].rsplit("/", 1)[-1] if m else "?"
                py = loc["mapping"] in pymaps
                if not loc["fns"]:
                    frames.append(("0x%x" % loc["address"], "", py, base))
                for f, ln in zip(loc["fns"], loc["lines"]):
                    fl = s[p["fnfile"].get(f, 0)].rsplit("/", 1)[-1]
                    frames.append((s[p["fn"].get(f, 0)], "%s:%d" % (fl, ln),
                                   py, base))
            names = [f[0] for f in frames]
            if "_PyEval_EvalFrameDefault" in names:
                eval_left += n
            if any(f in names for f in (share or fns)):
                anyfn += n
            for f in fns:
                if f not in names:
                    continue
                k = names.index(f)
                with_fn[f] += n
                where[f].add(frames[k][1])
                c = names[k + 1] if k + 1 < len(names) else "(root)"
                callers[f][c] = callers[f].get(c, 0) + n
                native = [fr for fr in frames[:k] if not fr[2]]
                if native:
                    below[f] += n
                    below_maps[f].update(fr[3] for fr in native)
                chain = tuple(fr[0] for fr in frames[k:] if fr[2])
                chains[f][chain] = chains[f].get(chain, 0) + n
    out = {
        "samples": total,
        "shares": {f: round(with_fn[f] / anyfn, 4) if anyfn else 0
                   for f in fns},
        "where": {f: sorted(where[f]) for f in fns},
        "callers": {f: {c: round(v / with_fn[f], 4)
                        for c, v in sorted(callers[f].items(),
                                           key=lambda x: -x[1])[:4]}
                    for f in fns if with_fn[f]},
        "below": {f: round(below[f] / with_fn[f], 4) if with_fn[f] else 0
                  for f in fns},
        "below_maps": {f: sorted(below_maps[f]) for f in fns},
        "chain": {f: list(max(chains[f].items(), key=lambda x: x[1])[0])
                  if chains[f] else [] for f in fns},
        "python_map": python_map,
        "eval_left": round(eval_left / total, 4) if total else 0,
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
