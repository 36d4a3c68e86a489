#!/usr/bin/env python3
"""The planner's own measurement against the sweep's, shape by shape (issue 26: the planner measures what the
benchmark measures).

    python3 scripts/plan-vs-sweep.py WARMUP.json COMBINED.json [ROUND.json ...]

WARMUP.json: the sweep's warm-up pass (sweep-calls.sh keeps it as warmup.json), in which the planner measured its
candidates for every shape; its "auto" records carry planner_source ("measured" there) and planner_ms (each
candidate's median over the planner's rounds, by label). COMBINED.json: the rounds combined by combine-rounds.py, in
which the benchmark timed the sweep's methods in shuffled interleaved iterations. A candidate is compared where both
measured it: the planner's label against a record's "ran" label (its canonical form), "nccl" against nccl_seq.

Prints per shape the planner's choice, how many candidates both measured, the median and range of planner ms /
benchmark ms, and whether the planner's choice is within 2% of the fastest of the shared candidates by the
benchmark's times; then the totals: the share of shared candidates within 3% (issue 26's bar) and of shapes whose
choice the benchmark confirms. With two or more ROUND.json files (the sweep's ubuf rounds, sweep-r<N>.json), also
the benchmark's own agreement, the noise floor of the 3% bar: for the same shared candidates, how many rounds timed
within 3% of each other (slowest over fastest round), and the median of that spread. Exit 0; 2 for bad input.
"""
import json
import statistics
import sys

SHAPE = ("op", "tp", "dtype", "m", "k", "n")


def fail(message):
    print(f"plan-vs-sweep: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        fail(f"{path} is not a results file (no records list)")
    return doc["records"]


def shape_of(r):
    return tuple(r.get(f) for f in SHAPE) + (r.get("fp8"),)


def bench_times(records):
    """{shape: {label: ms}} of a benchmark file: candidates by their canonical label, nccl_seq as "nccl"."""
    bench = {}
    for r in records:
        if r.get("method") == "auto" or "ms" not in r or not all(f in r for f in SHAPE):
            continue
        label = "nccl" if r["method"] == "nccl_seq" else r.get("ran", r["method"])
        bench.setdefault(shape_of(r), {})[label] = r["ms"]
    return bench


def compare(warmup, combined):
    """[(shape, chosen, {label: (planner_ms, bench_ms)})] for every auto record the planner measured."""
    bench = bench_times(combined)
    out = []
    for r in warmup:
        if r.get("method") != "auto" or not isinstance(r.get("planner_ms"), dict):
            continue
        theirs = bench.get(shape_of(r), {})
        shared = {label: (ms, theirs[label]) for label, ms in r["planner_ms"].items() if label in theirs}
        out.append((shape_of(r), r.get("ran"), shared))
    return out


def report(rows):
    lines = [f"{'op':3s} {'tp':>2s} {'M':>6s} {'K':>6s} {'N':>6s} {'fp8':>5s}  {'planner chose':28s} {'both':>4s} "
             f"{'plan/bench med':>14s} {'min':>6s} {'max':>6s}  choice by the bench"]
    ratios, confirmed, judged = [], 0, 0
    for shape, chosen, shared in rows:
        op, tp, _, m, k, n, fp8 = shape
        if not shared:
            lines.append(f"{op:3s} {tp:2d} {m:6d} {k:6d} {n:6d} {'e4m3' if fp8 else '-':>5s}  {chosen or '?':28s} "
                         f"{0:4d}  (no candidate measured by both)")
            continue
        r = [p / b for p, b in shared.values()]
        ratios += r
        verdict = "-"
        if chosen in shared and len(shared) > 1:
            judged += 1
            fastest = min(b for _, b in shared.values())
            ok = shared[chosen][1] <= 1.02 * fastest
            confirmed += ok
            verdict = "within 2%" if ok else f"{shared[chosen][1] / fastest:.3f}x the fastest"
        lines.append(f"{op:3s} {tp:2d} {m:6d} {k:6d} {n:6d} {'e4m3' if fp8 else '-':>5s}  {chosen or '?':28s} "
                     f"{len(shared):4d} {statistics.median(r):14.3f} {min(r):6.3f} {max(r):6.3f}  {verdict}")
    within = sum(1 for x in ratios if abs(x - 1) <= 0.03)
    lines.append("")
    if ratios:
        lines.append(f"shared candidates: {len(ratios)}; planner ms / benchmark ms median {statistics.median(ratios):.3f}"
                     f" (min {min(ratios):.3f}, max {max(ratios):.3f}); within 3%: {within} of {len(ratios)}"
                     f" ({100 * within / len(ratios):.0f}%)")
    else:
        lines.append("shared candidates: none (did the warm-up's auto records carry planner_ms?)")
    lines.append(f"shapes whose planner choice the benchmark puts within 2% of the fastest shared candidate:"
                 f" {confirmed} of {judged}")
    return lines


def rounds_agreement(rows, rounds):
    """The benchmark against itself on the shared candidates: (within 3%, compared, median slowest/fastest)."""
    spreads = []
    for shape, _, shared in rows:
        for label in shared:
            times = [r[shape][label] for r in rounds if label in r.get(shape, {})]
            if len(times) >= 2 and min(times) > 0:
                spreads.append(max(times) / min(times))
    within = sum(1 for x in spreads if x <= 1.03)
    return within, len(spreads), statistics.median(spreads) if spreads else float("nan")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = compare(load(argv[0]), load(argv[1]))
    lines = report(rows)
    if len(argv) > 3:
        within, compared, median = rounds_agreement(rows, [bench_times(load(p)) for p in argv[2:]])
        lines.append(f"the benchmark's own {len(argv) - 2} rounds on the same candidates: within 3% of each other"
                     f" (slowest over fastest round) on {within} of {compared}"
                     f" ({100 * within / compared if compared else 0:.0f}%), median spread {median:.3f}")
    elif len(argv) == 3:
        fail("give two or more round files to compare the rounds with each other")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
