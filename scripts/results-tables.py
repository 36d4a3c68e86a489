#!/usr/bin/env python3
"""Prints README's results tables (markdown) from results files, so the README can be regenerated from them.

    python3 scripts/results-tables.py OVERLAP.json [OVERLAP.json ...] [--torch TORCH.json]

OVERLAP files come from `ubuf bench ag|rs|sweep --out`; TORCH from bench/torch/torch_baseline.py (same shapes, same
lease). For each shape: the GEMM as one call, the communication alone (the faster of copy engines and NCCL), NCCL
sequential, PyTorch async-TP when given, the planned op ("auto") with the method it ran, its % of the honest ideal,
and its speed against NCCL sequential and PyTorch async-TP. A record the benchmark flagged as a measurement fault
is marked with "(!)".
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main(argv):
    torch_path = None
    if "--torch" in argv:
        i = argv.index("--torch")
        torch_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    torch = {}
    if torch_path:
        for r in load(torch_path)["records"]:
            if r["method"] == "torch_async":
                torch[(r["op"], r["m"], r["k"], r["n"])] = r["ms"]
    rows = {}
    for path in argv:
        for r in load(path)["records"]:
            if r["method"] == "auto" and "ideal_ms" in r:
                rows.setdefault(r["op"], []).append(r)
    for op, recs in rows.items():
        print(f"\n{op.upper()} (tp={recs[0]['tp']}, {recs[0]['dtype']}), ms:\n")
        print("| M×K×N | GEMM | comm | NCCL seq | torch async-TP | **ubuf auto** (ran) | % of ideal | vs NCCL seq | vs torch |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in sorted(recs, key=lambda x: (x["m"], x["k"], x["n"])):
            key = (op, r["m"], r["k"], r["n"])
            t = torch.get(key)
            fault = " (!)" if r.get("measurement_fault") else ""
            print(f"| {r['m']}×{r['k']}×{r['n']} | {r['gemm_ms']:.3f} | {r['comm_ms']:.3f} | {r['nccl_seq_ms']:.3f} | "
                  f"{'%.3f' % t if t else '-'} | **{r['ms']:.3f}** ({r['ran']}) | {r['pct_of_ideal']:.1f}{fault} | "
                  f"{r['vs_nccl_seq']:.2f}x | {'%.2fx' % (t / r['ms']) if t else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
