#!/usr/bin/env python3
"""Call 2's one warm-up pass, timed as CUDA graph replays (bench sweep --cuda-graph --iters 1 --warmup 0), against the
same call's two rounds issued call by call (the rounds lacked --cuda-graph: see README.md), per method family and
M range: the median over shapes of replay ms / eager ms (eager: the median of the two rounds), and the same for the
ideal. One replay sample per candidate against 20 eager ones a round: a rough, not a fine, comparison.
Usage: python3 replay-vs-eager.py call2-0972df4-h200x4"""
import collections
import json
import statistics as st
import sys

d = sys.argv[1]
warm = json.load(open(f"{d}/warmup.json"))["records"]
rounds = [json.load(open(f"{d}/sweep-r{i}.json"))["records"] for i in (1, 2)]


def key(r):
    return r["op"], r["m"], r["k"], r["n"], r["method"]


assert all(r.get("cuda_graph") for r in warm if "timing" in r), "the warm-up must be replay-timed"
assert not any(r.get("cuda_graph") for rs in rounds for r in rs if "timing" in r), "the rounds must be eager"
eager = collections.defaultdict(list)
for rs in rounds:
    for r in rs:
        eager[key(r)].append(r)
ms, ideal = collections.defaultdict(list), collections.defaultdict(list)
for r in warm:
    k = key(r)
    if k not in eager or k[4] == "auto":  # auto: the rounds ran their own planner's choice
        continue
    band = "M <= 1024" if k[1] <= 1024 else "M >= 2048"
    ms[(k[0], band, k[4].split(":")[0])].append(r["ms"] / st.median(x["ms"] for x in eager[k]))
    if "ideal_ms" in r:
        ideal[(k[0], band)].append(r["ideal_ms"] / st.median(x["ideal_ms"] for x in eager[k]))
print("op  M band     method      n  replay/eager ms: median  p25    p75")
for g, v in sorted(ms.items()):
    v = sorted(v)
    print(f"{g[0]}  {g[1]:9}  {g[2]:9} {len(v):4}  {st.median(v):22.3f}  {v[len(v) // 4]:.3f}  {v[3 * len(v) // 4]:.3f}")
print("op  M band     ideal       n  replay/eager ideal: median")
for g, v in sorted(ideal.items()):
    print(f"{g[0]}  {g[1]:9}  ideal     {len(v):4}  {st.median(v):22.3f}")

# auto's % of the ideal: the replay-timed warm-up (one sample) against the eager rounds (median of two), per band.
pct = collections.defaultdict(lambda: ([], []))
for r in warm:
    k = key(r)
    if k[4] != "auto" or k not in eager or "pct_of_ideal" not in r:
        continue
    band = "M <= 1024" if k[1] <= 1024 else ("M 2048-4096" if k[1] <= 4096 else "M 8192-16384")
    pct[(k[0], band)][0].append(r["pct_of_ideal"])
    pct[(k[0], band)][1].append(st.median(x["pct_of_ideal"] for x in eager[k]))
print("op  M band        n  auto % of ideal, median: replay warm-up  eager rounds")
for g, (a, b) in sorted(pct.items()):
    print(f"{g[0]}  {g[1]:12} {len(a):3}  {st.median(a):38.1f}  {st.median(b):12.1f}")
