#!/usr/bin/env python3
"""Compares what `ubuf plan` measured with what `ubuf bench` measured on the same shapes and candidates
(scripts/plan-vs-bench.sh's files):

    python3 scripts/plan-vs-bench.py DIR

For each plan-<tag>.txt with its bench-<tag>.json: per candidate the planner's median and the benchmark's, their
ratio, the planner's choice and the benchmark's fastest, and whether the choice is within 2% of that fastest.
"""
import argparse
import glob
import json
import os
import re
import sys

ROW = re.compile(r"^  ([a-z][^ ]*)\s+([0-9.]+)\s+([0-9.]+)%(\s+<- chosen)?$")


def plan_table(path):
    """{label: ms} and the chosen label from a plan command's output."""
    times, chosen = {}, None
    with open(path) as f:
        for line in f:
            m = ROW.match(line.rstrip("\n"))
            if m:
                times[m.group(1)] = float(m.group(2))
                if m.group(4):
                    chosen = m.group(1)
    return times, chosen


def bench_times(path):
    with open(path) as f:
        d = json.load(f)
    recs = d["records"] if isinstance(d, dict) else d
    return {r["method"]: float(r["ms"]) for r in recs if "ms" in r and r.get("method") not in (None, "auto")}


def compare(directory):
    rows = []
    for plan in sorted(glob.glob(os.path.join(directory, "plan-*.txt"))):
        tag = os.path.basename(plan)[len("plan-"):-len(".txt")]
        bench = os.path.join(directory, f"bench-{tag}.json")
        if not os.path.exists(bench):
            continue
        p, chosen = plan_table(plan)
        b = bench_times(bench)
        common = [k for k in p if k in b]
        if not common:
            continue
        fastest = min(common, key=lambda k: b[k])
        ratios = {k: p[k] / b[k] for k in common}
        rows.append({"tag": tag, "chosen": chosen, "bench_fastest": fastest,
                     "chosen_vs_fastest": b[chosen] / b[fastest] if chosen in b else float("nan"),
                     "ratios": ratios, "plan": p, "bench": b})
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    a = ap.parse_args(argv)
    rows = compare(a.dir)
    if not rows:
        print("no plan-*.txt with its bench-*.json in " + a.dir, file=sys.stderr)
        return 1
    for r in rows:
        rs = sorted(r["ratios"].values())
        print(f"{r['tag']}: chosen {r['chosen']} (bench: {r['chosen_vs_fastest']:.3f} x its fastest, "
              f"{r['bench_fastest']}); plan/bench per candidate {rs[0]:.3f}..{rs[-1]:.3f}, "
              f"median {rs[len(rs) // 2]:.3f}")
        for k, v in sorted(r["ratios"].items(), key=lambda kv: r["bench"][kv[0]]):
            print(f"    {k:28s} plan {r['plan'][k]:8.4f}  bench {r['bench'][k]:8.4f}  ratio {v:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
