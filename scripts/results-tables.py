#!/usr/bin/env python3
"""Prints README's results tables (markdown) from results files, so the README can be regenerated from them.

    python3 scripts/results-tables.py COMBINED.json
    python3 scripts/results-tables.py OVERLAP.json [OVERLAP.json ...] [--torch TORCH.json]

COMBINED comes from scripts/combine-rounds.py (ubuf's and PyTorch's medians over alternating rounds in one file);
OVERLAP files from `ubuf bench ag|rs|sweep --out`, TORCH from bench/torch/torch_baseline.py (same shapes, same
lease). PyTorch's records are taken from any of the files. For each overlap shape: the GEMM as one call, the
communication alone (the faster of copy engines and NCCL), NCCL sequential, PyTorch's NCCL + matmul (torch_seq) and
async-TP (torch_async) when present, the planned op ("auto") with the method it ran, its % of the honest ideal, and
its speed against NCCL sequential, torch_seq and torch_async (their time over auto's). A record the benchmark
flagged as a measurement fault is marked with "(!)". Where the files hold GEMM records timed one after another
(`ubuf bench gemm`, the baseline's gemm:M,K,N words), a GEMM table follows: cuBLASLt against torch.matmul.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def ms(v):
    return "%.3f" % v if v else "-"


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"


def main(argv):
    paths = list(argv)
    if "--torch" in paths:
        i = paths.index("--torch")
        if i + 1 >= len(paths):
            print(__doc__, file=sys.stderr)
            return 2
        paths = paths[:i] + paths[i + 1:]  # the torch file is read like any other
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    torch = {}
    rows = {}
    gemm = {}
    rounds = set()
    for path in paths:
        doc = load(path)
        for r in doc["records"]:
            key = (r["op"], r["m"], r["k"], r["n"])
            if r["method"] in ("torch_async", "torch_seq"):
                torch[(r["method"],) + key] = r["ms"]
            elif r["method"] == "auto" and "ideal_ms" in r:
                rows.setdefault(r["op"], []).append(r)
                rounds.add(r.get("rounds", 1))
            elif r["op"] == "gemm" and r.get("timing", "sequential" if r["method"] == "cublaslt" else "") == "sequential":
                gemm.setdefault((r["dtype"], r["m"], r["k"], r["n"]), {})[r["method"]] = r
    if rounds and max(rounds) > 1:
        print(f"\nMedians over {min(rounds)}" + (f" to {max(rounds)}" if max(rounds) != min(rounds) else "")
              + " alternating rounds (scripts/combine-rounds.py).")
    for op, recs in rows.items():
        print(f"\n{op.upper()} (tp={recs[0]['tp']}, {recs[0]['dtype']}), ms:\n")
        print("| M×K×N | GEMM | comm | NCCL seq | torch seq | torch async-TP | **ubuf auto** (ran) | % of ideal | "
              "vs NCCL seq | vs torch seq | vs torch async |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(recs, key=lambda x: (x["m"], x["k"], x["n"])):
            key = (op, r["m"], r["k"], r["n"])
            ts, ta = torch.get(("torch_seq",) + key), torch.get(("torch_async",) + key)
            fault = " (!)" if r.get("measurement_fault") else ""
            print(f"| {r['m']}×{r['k']}×{r['n']} | {r['gemm_ms']:.3f} | {r['comm_ms']:.3f} | {r['nccl_seq_ms']:.3f} | "
                  f"{ms(ts)} | {ms(ta)} | **{r['ms']:.3f}** ({r.get('ran', 'auto')}) | {r['pct_of_ideal']:.1f}{fault} | "
                  f"{r['vs_nccl_seq']:.2f}x | {ratio(ts, r['ms'])} | {ratio(ta, r['ms'])} |")
    if gemm:
        print("\nGEMM, one GPU, calls one after another (ms; cuBLASLt / torch.matmul: at most 1.01 is parity):\n")
        print("| dtype | M×K×N | cuBLASLt | TFLOP/s | torch.matmul | cuBLASLt / torch |")
        print("|---|---|---|---|---|---|")
        for (dtype, m, k, n), by in sorted(gemm.items(), key=lambda e: (e[0][1], e[0][2], e[0][3], e[0][0])):
            lt, pt = by.get("cublaslt"), by.get("torch")
            tflops = "%.0f" % lt["tflops"] if lt and lt.get("tflops") else "-"
            print(f"| {dtype} | {m}×{k}×{n} | {ms(lt and lt['ms'])} | {tflops} | {ms(pt and pt['ms'])} | "
                  f"{'%.3f' % (lt['ms'] / pt['ms']) if lt and pt else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
