#!/usr/bin/env python3
"""Where auto's time above the honest ideal goes, per sweep file: for every auto record with M >= 2048,
slack = ms - ideal_ms, split into the op's own chunking (its chunk GEMMs back to back, gemm_chunked_ms, over the
ideal's GEMM term) and the rest (pipeline fill and drain, the tail reduction, signals, contention). Grouped by op and
by regime: comm-bound (GEMM term < communication term) or GEMM-bound. Medians; usage: slack.py SWEEP.json..."""
import json
import statistics as st
import sys

for path in sys.argv[1:]:
    recs = json.load(open(path))["records"]
    print(f"== {path}")
    print(f"{'op':3} {'regime':10} {'n':>3} {'%ideal':>7} {'slack us':>9} {'chunking us':>12} {'rest us':>8} {'chunking share':>15}")
    for op in ("ag", "rs"):
        for regime in ("comm-bound", "GEMM-bound"):
            rows = []
            for x in recs:
                if x.get("method") != "auto" or x["op"] != op or x["m"] < 2048 or "gemm_chunked_ms" not in x:
                    continue
                g = min(v for v in (x["gemm_ms"], x.get("gemm_chunked_ms"), x.get("gemm_streams_ms")) if v)
                c = min(v for v in (x.get("ce_comm_ms"), x.get("nccl_rs_ms") or x.get("nccl_ag_ms"), x["comm_ms"]) if v)
                if (g < c) != (regime == "comm-bound"):
                    continue
                slack = (x["ms"] - x["ideal_ms"]) * 1000
                chunk = max(0.0, min(x["gemm_chunked_ms"] - g, x["ms"] - x["ideal_ms"])) * 1000 if g >= c else 0.0
                rows.append((x["pct_of_ideal"], slack, chunk, slack - chunk))
            if rows:
                share = st.median([r[2] / r[1] for r in rows if r[1] > 0] or [0])
                print(f"{op:3} {regime:10} {len(rows):3d} {st.median(r[0] for r in rows):7.1f} "
                      f"{st.median(r[1] for r in rows):9.1f} {st.median(r[2] for r in rows):12.1f} "
                      f"{st.median(r[3] for r in rows):8.1f} {share:15.2f}")
