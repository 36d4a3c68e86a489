#!/usr/bin/env python3
"""Where auto's time above the honest ideal goes, in combined sweep files (scripts/combine-rounds.py's output):
  python3 scripts/sweep-slack.py [--min-m M] [--rows] SWEEP.json...
For every auto record with M >= --min-m (default 2048) that has the ideal's terms, slack = ms - ideal_ms. The record is
GEMM-bound when the ideal's GEMM term (the least of gemm_ms, gemm_chunked_ms, gemm_streams_ms) is at least its
communication term (comm_ms), else communication-bound. A GEMM-bound op's slack splits into its chunking (its own
chunk GEMMs back to back, gemm_chunked_ms, over the GEMM term; at most the slack) and the rest: the pipeline's fill
and drain, its tail reduction, signals and waits, contention. A communication-bound op's chunking is not on its
critical path the same way, so all of its slack counts as the rest. Prints, per file, op and regime: shapes, median
% of ideal, and the medians of slack, chunking and rest in microseconds; --rows lists every record too."""
import argparse
import json
import statistics
import sys


def terms(rec):
    """(GEMM term, communication term) of the record's ideal, or None when it lacks them."""
    gemms = [rec.get(k) for k in ("gemm_ms", "gemm_chunked_ms", "gemm_streams_ms")]
    gemms = [v for v in gemms if isinstance(v, (int, float)) and v > 0]
    comm = rec.get("comm_ms")
    if not gemms or not isinstance(comm, (int, float)) or comm <= 0 or "ideal_ms" not in rec:
        return None
    return min(gemms), comm


def split(rec):
    """(regime, % of ideal, slack us, chunking us, rest us) of one auto record, or None."""
    t = terms(rec)
    if t is None:
        return None
    g, c = t
    slack = rec["ms"] - rec["ideal_ms"]
    gemm_bound = g >= c
    chunked = rec.get("gemm_chunked_ms")
    chunking = max(0.0, min(chunked - g, slack)) if gemm_bound and isinstance(chunked, (int, float)) else 0.0
    return ("GEMM-bound" if gemm_bound else "comm-bound", rec["pct_of_ideal"], slack * 1e3, chunking * 1e3,
            (slack - chunking) * 1e3)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-m", type=int, default=2048)
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    for path in args.files:
        try:
            with open(path) as f:
                records = json.load(f)["records"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"sweep-slack: {path}: not a combined sweep file ({e})")
        print(f"== {path} (auto, M >= {args.min_m}; us = microseconds, medians)")
        print(f"{'op':3} {'regime':10} {'shapes':>6} {'%ideal':>7} {'slack us':>9} {'chunking us':>12} {'rest us':>8}")
        rows = []
        for r in records:
            if r.get("method") != "auto" or r.get("m", 0) < args.min_m:
                continue
            s = split(r)
            if s is not None:
                rows.append((r["op"], r["m"], r["k"], r["n"], r.get("ran", "?")) + s)
        for op in ("ag", "rs"):
            for regime in ("comm-bound", "GEMM-bound"):
                group = [x for x in rows if x[0] == op and x[5] == regime]
                if group:
                    med = [statistics.median(x[i] for x in group) for i in (6, 7, 8, 9)]
                    print(f"{op:3} {regime:10} {len(group):6d} {med[0]:7.1f} {med[1]:9.1f} {med[2]:12.1f} "
                          f"{med[3]:8.1f}")
        if args.rows:
            print(f"\n{'op':3} {'M':>6} {'K':>6} {'N':>6} {'ran':28} {'regime':10} {'%ideal':>7} {'slack':>7} "
                  f"{'chunking':>8} {'rest':>7}")
            for x in sorted(rows):
                print(f"{x[0]:3} {x[1]:6d} {x[2]:6d} {x[3]:6d} {x[4]:28} {x[5]:10} {x[6]:7.1f} {x[7]:7.1f} "
                      f"{x[8]:8.1f} {x[9]:7.1f}")
        if not rows:
            print("(no auto record with the ideal's terms)")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
