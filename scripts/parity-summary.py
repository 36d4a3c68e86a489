#!/usr/bin/env python3
"""Medians over rounds of each method per shape from a parity folder (gemm-r*.json, torch-gemm-r*.json), each
against torch.matmul: the median ratio, how many shapes within 1% and above 1.03, and the worst shapes."""
import collections, glob, json, statistics, sys
d = collections.defaultdict(lambda: collections.defaultdict(list))
rank = {}
for f in sorted(glob.glob(sys.argv[1] + "/*gemm-r*.json")):
    for r in json.load(open(f))["records"]:
        s = (r["m"], r["k"], r["n"])
        d[s][r["method"]].append(r["ms"])
        if r["method"] == "cublaslt" and "heuristic_rank" in r:
            rank[s] = r["heuristic_rank"]
methods = sorted({m for v in d.values() for m in v if m != "torch"})
for m in methods:
    ratios = {s: statistics.median(v[m]) / statistics.median(v["torch"])
              for s, v in d.items() if m in v and "torch" in v}
    if not ratios:
        continue
    vals = list(ratios.values())
    print(f"{m}: {len(vals)} shapes, median {statistics.median(vals):.3f},"
          f" within 1% {sum(abs(x - 1) <= 0.01 for x in vals)}, above 1.03 {sum(x > 1.03 for x in vals)},"
          f" below 0.97 {sum(x < 0.97 for x in vals)}")
    for s, x in sorted(ratios.items(), key=lambda kv: -kv[1])[:6]:
        print(f"   {s[0]}x{s[1]}x{s[2]} {x:.3f} rank {rank.get(s)}")
if len(methods) == 2:
    a, b = methods
    both = [(s, statistics.median(v[a]) / statistics.median(v[b])) for s, v in d.items() if a in v and b in v]
    diff = [(s, x) for s, x in both if abs(x - 1) > 0.01]
    print(f"{a} / {b}: median {statistics.median(x for _, x in both):.3f}; differing by more than 1% on {len(diff)}:")
    for s, x in sorted(diff, key=lambda kv: kv[1]):
        print(f"   {s[0]}x{s[1]}x{s[2]} {x:.3f} rank {rank.get(s)}")
