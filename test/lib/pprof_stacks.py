#!/usr/bin/env python3
"""Reads pprof profiles (gzipped or not) with no dependency but Python and
prints one JSON object summing them up, for the agent's end-to-end tests:

  samples      samples (the first sample value, summed)
  depth_median median stack depth in frames, weighted by sample count
               (inlined functions count as frames of their own)
  reach        share of samples whose stack holds a function matching
               --root (default: main or __libc_start_main or _start)
  top          [[function, share of samples as leaf], ...] (10 first)
  functions    {function: share of samples with it anywhere on the stack}
               for the functions given with --has (repeatable)
  leaf_maps    {mapping file base name: share of samples whose leaf
               location lies in it}
  bad_frames   locations whose address lies outside their mapping, or
               that have no mapping (garbage frames)
  mappings     file names of the mappings, in order
  comments     the profile comments
  files        number of profiles read
  labels       {key: {value: share of samples}} for the sample labels
               given with --label (repeatable; "" for samples without;
               numeric labels as their decimal value)
  kernel       share of samples with a frame in the "[kernel]" mapping
  unnamed_leaf share of samples whose leaf frame has no function name
  names_in     {mapping file base name: [function names of its
               locations]} (the first 50 of each, sorted)
  cxx_names    function names with a C++ signature ("f(int)", "ns::f")
  mangled      function names still mangled (_Z...)

usage: pprof_stacks.py [--root REGEX] [--has REGEX]... [--label KEY]...
                       FILE...
"""
import gzip
import json
import re
import statistics
import sys


def varint(b, i):
    """Decodes a varint at b[i]: (value, next index)."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """Yields (field number, wire type, value) of a message."""
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % t)
        yield f, t, v


def packed(t, v):
    """The integers of a repeated field, packed or not."""
    if t == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def read(path):
    """One profile: samples, locations, functions, mappings, strings."""
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = {"samples": [], "loc": {}, "fn": {}, "fnfile": {}, "map": {},
         "maps": [], "strings": [], "comments": []}
    for f, t, v in fields(data):
        if f == 2:
            locs, vals, labs = [], [], {}
            for g, u, w in fields(v):
                if g == 1:
                    locs += packed(u, w)
                elif g == 2:
                    vals += packed(u, w)
                elif g == 3:
                    lab = dict((h, x) for h, _, x in fields(w))
                    labs[lab.get(1, 0)] = (lab[2] if 2 in lab else
                                           "#%d" % lab.get(3, 0))
            p["samples"].append((locs, vals, labs))
        elif f == 3:
            m = dict((g, w) for g, u, w in fields(v))
            mid = m.get(1, 0)
            p["map"][mid] = (m.get(2, 0), m.get(3, 0), m.get(5, 0))
            p["maps"].append(mid)
        elif f == 4:
            loc = {"mapping": 0, "address": 0, "fns": [], "lines": []}
            for g, u, w in fields(v):
                if g == 1:
                    loc["id"] = w
                elif g == 2:
                    loc["mapping"] = w
                elif g == 3:
                    loc["address"] = w
                elif g == 4:
                    ln = dict((h, x) for h, _, x in fields(w))
                    loc["fns"].append(ln.get(1, 0))
                    loc["lines"].append(ln.get(2, 0))
            p["loc"][loc.get("id", 0)] = loc
        elif f == 5:
            fn = dict((g, w) for g, u, w in fields(v))
            p["fn"][fn.get(1, 0)] = fn.get(2, 0)
            p["fnfile"][fn.get(1, 0)] = fn.get(4, 0)
        elif f == 6:
            p["strings"].append(v.decode("utf-8", "replace"))
        elif f == 13:
            p["comments"] += packed(t, v)
    return p


def main(argv):
    label_keys = []
    root, has, files = r"^(main|__libc_start_main|__libc_start_call_main|_start)$", [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--root":
            root, i = argv[i + 1], i + 2
        elif argv[i] == "--has":
            has.append(argv[i + 1])
            i += 2
        elif argv[i] == "--label":
            label_keys.append(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    root_re, has_re = re.compile(root), [re.compile(h) for h in has]
    total = reached = bad = 0
    depths, leaf, with_fn, mappings, comments = [], {}, {h: 0 for h in has}, [], []
    leaf_map = {}
    labels = {k: {} for k in label_keys}
    kernel = unnamed = 0
    names_in = {}
    for path in files:
        p = read(path)
        s = p["strings"]
        mappings = mappings or [s[p["map"][m][2]] for m in p["maps"]]
        comments += [s[c] for c in p["comments"]]
        for loc in p["loc"].values():
            m = p["map"].get(loc["mapping"])
            # A mapping of frames by name ("[python]": no addresses).
            by_name = (m is not None and m[0] == m[1] == 0 and
                       loc["address"] == 0 and loc["fns"])
            if m is None or not (m[0] <= loc["address"] < m[1] or
                                 by_name):
                bad += 1
            if m is not None:
                base = s[m[2]].rsplit("/", 1)[-1]
                names_in.setdefault(base, set()).update(
                    s[p["fn"].get(f, 0)] for f in loc["fns"])
        for locs, vals, labs in p["samples"]:
            n = vals[0] if vals else 0
            names = []
            in_kernel = False
            for lid in locs:
                loc = p["loc"].get(lid, {"fns": [], "address": 0,
                                         "mapping": 0})
                fns = [s[p["fn"].get(f, 0)] for f in loc["fns"]]
                names += fns or ["0x%x" % loc["address"]]
                m = p["map"].get(loc["mapping"])
                in_kernel = in_kernel or (m is not None and
                                          s[m[2]] == "[kernel]")
            total += n
            kernel += n if in_kernel else 0
            if not names or names[0].startswith("0x"):
                unnamed += n
            named = dict((s[k], v[1:] if isinstance(v, str) else s[v])
                         for k, v in labs.items())
            for k in label_keys:
                v = named.get(k, "")
                labels[k][v] = labels[k].get(v, 0) + n
            depths.append((len(names), n))
            if any(root_re.search(x) for x in names):
                reached += n
            if names:
                leaf[names[0]] = leaf.get(names[0], 0) + n
            if locs:
                m = p["map"].get(p["loc"].get(locs[0], {}).get("mapping", 0))
                base = s[m[2]].rsplit("/", 1)[-1] if m else "?"
                leaf_map[base] = leaf_map.get(base, 0) + n
            for h, r in zip(has, has_re):
                if any(r.search(x) for x in names):
                    with_fn[h] += n
    flat = []
    for d, n in depths:
        flat += [d] * min(n, 1000)
    out = {
        "files": len(files),
        "samples": total,
        "depth_median": statistics.median(flat) if flat else 0,
        "reach": round(reached / total, 4) if total else 0,
        "top": [[k, round(v / total, 4)] for k, v in
                sorted(leaf.items(), key=lambda kv: -kv[1])[:10]] if total else [],
        "functions": {h: round(v / total, 4) if total else 0
                      for h, v in with_fn.items()},
        "leaf_maps": {k: round(v / total, 4) for k, v in
                      sorted(leaf_map.items(), key=lambda kv: -kv[1])}
        if total else {},
        "bad_frames": bad,
        "mappings": mappings,
        "comments": comments,
        "labels": {k: {v: round(c / total, 4) for v, c in d.items()}
                   for k, d in labels.items()} if total else {},
        "kernel": round(kernel / total, 4) if total else 0,
        "unnamed_leaf": round(unnamed / total, 4) if total else 0,
        "names_in": {k: sorted(v)[:50] for k, v in names_in.items()},
        "cxx_names": sum(1 for v in names_in.values() for n in v
                         if "(" in n or "::" in n),
        "mangled": sum(1 for v in names_in.values() for n in v
                       if n.startswith("_Z")),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
