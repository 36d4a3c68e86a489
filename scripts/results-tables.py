#!/usr/bin/env python3
"""Prints the results tables (markdown) of docs/results.md from results files, and keeps that page in step with them.

    python3 scripts/results-tables.py COMBINED.json
    python3 scripts/results-tables.py OVERLAP.json [OVERLAP.json ...] [--torch TORCH.json]
    python3 scripts/results-tables.py --sweep COMBINED.json [COMBINED.json ...]
    python3 scripts/results-tables.py --update docs/results.md
    python3 scripts/results-tables.py --check docs/results.md

--update rewrites every generated block of a markdown page: the lines between a line
`<!-- results-tables: FILE... [--torch FILE] -->` and a line `<!-- /results-tables -->` become the tables of the
files the marker names (paths relative to the repository root; shell patterns such as
bench/results/RUN/demo-*.json allowed). --check changes nothing and exits 1, naming the blocks, when a page's
tables differ from what their files give, so docs/results.md cannot drift from bench/results/
(scripts/test_results_tables.py checks it).

COMBINED comes from scripts/combine-rounds.py (ubuf's and PyTorch's medians over alternating rounds in one file);
OVERLAP files from `ubuf bench ag|rs|sweep --out`, TORCH from bench/torch/torch_baseline.py (same shapes, same
lease). PyTorch's records are taken from any of the files. For each overlap shape: the GEMM as one call, the
communication alone (the faster of copy engines and NCCL), NCCL sequential, PyTorch's NCCL + matmul (torch_seq) and
async-TP (torch_async) when present, the planned op ("auto") with the method it ran, its % of the honest ideal, and
its speed against NCCL sequential, torch_seq and torch_async (their time over auto's). A record the benchmark
flagged as a measurement fault is marked with "(!)". Where the files hold GEMM records timed one after another
(`ubuf bench gemm`, the baseline's gemm:M,K,N words), a GEMM table follows: cuBLASLt against torch.matmul. Files of
`ubuf demo --out` (op "layer") give a demo table: a row per file, its overlap, no_overlap and no_comm step times and
the hidden share. Where layer records of bench/torch/torch_layer.py (torch_nccl, torch_async) are among the files, a
layer-against-PyTorch table follows: per layer shape, the median over the files (alternating rounds) of every mode.
Files of `ubuf bench kernels` and bench/torch/torch_kernels.py (op "kernel") give a kernel table: per kernel and
shape, the median over the files of ubuf's time and % of copy bandwidth, PyTorch's time, and their ratio.

--sweep gives, instead, the model-shape sweep's table per tp (a combined file of `ubuf bench sweep` rounds and the
baseline's, scripts/combine-rounds.py; a single round file works too): a row per shape, named by the model GEMMs it is
(ModelShapes.SWEEP; Mixtral-8x7B's expert FC1/FC2 are Llama-3-8B's), with auto's time and the method it ran, % of
the ideal, auto against NCCL sequential and against PyTorch async-TP (their time over auto's), the fastest other
method measured in the same iterations and auto's time over it (combine-rounds.py's auto_over_fastest: the median
of each round's paired ratio), and whether that is within 2%; then the counts and the list of misses.
"""
import statistics
import glob
import io
import json
import os
import re
import sys
from contextlib import redirect_stdout

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BLOCK = re.compile(r"^(<!-- results-tables: ([^\n]*?) -->\n)(.*?)^(<!-- /results-tables -->)", re.S | re.M)


def load(path):
    with open(path) as f:
        return json.load(f)


def ms(v):
    return "%.3f" % v if v else "-"


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"


def main(argv):
    if argv and argv[0] in ("--update", "--check"):
        if len(argv) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        return update(argv[1], check=argv[0] == "--check")
    return tables(argv)


def render(args, root=ROOT):
    """The tables of one marker's arguments (paths relative to root), as a block's text."""
    words = []
    for w in args.split():
        if w in ("--torch", "--sweep"):
            words.append(w)
            continue
        found = sorted(glob.glob(os.path.join(root, w)))
        if not found:
            raise ValueError(f"no file matches {w} (marker '{args}')")
        words += found
    out = io.StringIO()
    with redirect_stdout(out):
        code = tables(words)
    if code != 0:
        raise ValueError("bad marker arguments: " + args)
    return out.getvalue().lstrip("\n") + "\n"


def update(page, check=False, root=ROOT):
    """Regenerates (or, with check, compares) every generated block of a markdown page; 1 when check finds drift."""
    with open(page) as f:
        text = f.read()
    stale = []

    def fresh(m):
        body = render(m.group(2), root)
        if body != m.group(3):
            stale.append(m.group(2))
        return m.group(1) + body + m.group(4)

    new = BLOCK.sub(fresh, text)
    if not BLOCK.search(text):
        print(f"{page}: no <!-- results-tables: ... --> block", file=sys.stderr)
        return 1
    if check:
        for args in stale:
            print(f"{page}: tables of '{args}' differ from the files: run "
                  f"python3 scripts/results-tables.py --update {page}", file=sys.stderr)
        return 1 if stale else 0
    if new != text:
        with open(page, "w") as f:
            f.write(new)
    print(f"{page}: {len(stale)} block(s) rewritten")
    return 0


# The sweep's models, as bench/src/main/java/dev/ubuf/bench/ModelShapes.java's SWEEP: name, hidden, ffn, query heads,
# kv heads, head dim, gated (SwiGLU: FC1 is 2 x ffn wide), attention GEMMs.
SWEEP_MODELS = [
    ("llama3-8b", 4096, 14336, 32, 8, 128, True, True),
    ("llama3-70b", 8192, 28672, 64, 8, 128, True, True),
    ("qwen2.5-32b", 5120, 27648, 40, 8, 128, True, True),
    ("mixtral-8x7b-expert", 4096, 14336, 32, 8, 128, True, False),
    ("gpt3-175b", 12288, 49152, 96, 96, 128, False, True),
]
SWEEP_GEMMS = ("qkv", "proj", "fc1", "fc2")
WITHIN = 1.02


def sweep_gemms(tp):
    """{(op, k, n): [(model index, gemm index, "model gemm")]} of the sweep's GEMMs at tp ranks (any M)."""
    out = {}
    for i, (name, hidden, ffn, qh, kvh, hd, gated, attention) in enumerate(SWEEP_MODELS):
        fc1 = 2 * ffn if gated else ffn
        gemms = [("fc1", "ag", hidden, fc1 // tp), ("fc2", "rs", ffn // tp, hidden)]
        if attention:
            gemms = [("qkv", "ag", hidden, (qh + 2 * kvh) * hd // tp), ("proj", "rs", qh * hd // tp, hidden)] + gemms
        for g, op, k, n in gemms:
            out.setdefault((op, k, n), []).append((i, SWEEP_GEMMS.index(g), f"{name} {g}"))
    return out


def sweep_name(tp, op, k, n):
    """The model GEMMs a sweep shape is ("llama3-8b / mixtral-8x7b-expert fc1"), and a sort key; "-" if none."""
    found = sweep_gemms(tp).get((op, k, n), [])
    if not found:
        return "-", (len(SWEEP_MODELS), 0)
    gemms = {x[2].split()[1] for x in found}
    if len(gemms) == 1:
        return " / ".join(x[2].split()[0] for x in found) + " " + gemms.pop(), found[0][:2]
    return " = ".join(x[2] for x in found), found[0][:2]


def sweep_tables(paths):
    """The model-shape sweep's table per (tp, dtype) of the files (see the module's doc)."""
    ours, torch, docs = {}, {}, {}
    for path in paths:  # PyTorch's records may come from any of the files, as in the tables above
        doc = load(path)
        for r in doc.get("records", []):
            if r.get("op") not in ("ag", "rs"):
                continue
            # FP8 operands make another sweep (never beside a bf16 baseline): its own table, named by them
            dtype = r["dtype"] + (f" out, FP8 operands ({r['fp8']})" if r.get("fp8") else "")
            key = (r["op"], r["tp"], dtype, r["m"], r["k"], r["n"])
            (torch if r["method"].startswith("torch") else ours).setdefault(key, {})[r["method"]] = r
            if not r["method"].startswith("torch"):
                docs.setdefault(key[1:3], doc)
    by_tp = {}
    for key, methods in ours.items():
        if "auto" in methods:
            by_tp.setdefault(key[1:3], []).append(key)
    for tp, dtype in sorted(by_tp):
        doc = docs[(tp, dtype)]
        rounds = sorted({ours[k]["auto"].get("rounds", 1) for k in by_tp[(tp, dtype)]})
        replays = any(ours[k]["auto"].get("cuda_graph") for k in by_tp[(tp, dtype)])
        print(f"\nModel-shape sweep, tp {tp}, {dtype}{', ubuf timed as CUDA graph replays' if replays else ''}: "
              f"{doc.get('device', '-')}, {doc.get('date', '-')}, commit"
              f" {doc.get('commit', '-')}"
              + (f", PyTorch {doc['torch']}" if doc.get("torch") else "")
              + (f"; medians over {rounds[0]}" + (f" to {rounds[-1]}" if len(rounds) > 1 else "")
                 + " alternating rounds" if rounds and rounds[-1] > 1 else "; one round") + ".\n")
        print("| GEMM | op | M×K×N | **ubuf auto** ms (ran) | % of ideal | vs NCCL seq | vs torch async |"
              " fastest other | auto / fastest | within 2% |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        rows, misses = [], []
        for key in by_tp[(tp, dtype)]:
            op, _, _, m, k, n = key
            name, order = sweep_name(tp, op, k, n)
            rows.append((order, m, op, k, n, name, key))
        n_within = n_measured = n_nccl = n_async = n_async_won = 0
        for order, m, op, k, n, name, key in sorted(rows):
            a = ours[key]["auto"]
            best, over = a.get("fastest"), a.get("auto_over_fastest")
            if over is None and a.get("rounds", 1) == 1:  # one round: its records ran in the same iterations
                others = {mth: r["ms"] for mth, r in ours[key].items() if mth != "auto"}
                if others:
                    best = min(others, key=others.get)
                    over = a["ms"] / others[best]
            within = "-" if over is None else "yes" if over <= WITHIN else "**no**"
            if over is not None:
                n_measured += 1
                if over <= WITHIN:
                    n_within += 1
                else:
                    misses.append(f"{name} ({op} {m}×{k}×{n}): auto ({a.get('ran', 'auto')}) {over:.3f}x"
                                  f" {best}")
            vs_nccl = a.get("vs_nccl_seq")
            if vs_nccl is not None and vs_nccl >= 1.0:
                n_nccl += 1
            ta = torch.get(key, {}).get("torch_async")
            if ta:
                n_async += 1
                if ta["ms"] > a["ms"]:
                    n_async_won += 1
            fault = " (!)" if a.get("measurement_fault") else ""
            print(f"| {name} | {op} | {m}×{k}×{n} | **{a['ms']:.3f}** ({a.get('ran', 'auto')}) | "
                  f"{a['pct_of_ideal']:.1f}{fault} | {'%.2fx' % vs_nccl if vs_nccl is not None else '-'} | "
                  f"{ratio(ta and ta['ms'], a['ms'])} | {best or '-'} | "
                  f"{'%.3f' % over if over is not None else '-'} | {within} |")
        total = len(rows)
        print(f"\nauto within 2% of the fastest other method measured in the same iterations: {n_within} of"
              f" {n_measured} shapes" + (f" ({100.0 * n_within / n_measured:.0f}%)" if n_measured else "")
              + f"; at least as fast as NCCL sequential: {n_nccl} of {total}; faster than PyTorch async-TP:"
              f" {n_async_won} of {n_async}.")
        if misses:
            print("\nMisses of the 2% (auto's time over the fastest other method's):\n")
            for x in misses:
                print(f"- {x}")
    return 0


def tables(argv):
    paths = list(argv)
    if "--sweep" in paths:
        paths = [p for p in paths if p != "--sweep"]
        if not paths:
            print(__doc__, file=sys.stderr)
            return 2
        return sweep_tables(paths)
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
    layers = []
    kernels = {}  # (kernel, model, tp, m, n) -> "ubuf"|"torch" -> [records]
    versus = {}  # (tp, hidden, ffn, tokens, dtype) -> method -> [ms per file], for the table against PyTorch
    for path in paths:
        doc = load(path)
        if "records" not in doc:
            continue  # not a results file (e.g. a Chrome trace beside one, matched by a pattern)
        steps = {r["method"]: r for r in doc["records"] if r["op"] == "layer"}
        for r in steps.values():
            # Activation and depth too: a GELU or 4-block demo must not be set beside PyTorch's 1-block SwiGLU step.
            key = (r["tp"], r.get("hidden"), r.get("ffn"), r.get("tokens"), r.get("gemm_dtype", r.get("dtype")),
                   r.get("activation"), r.get("layers", 1))
            versus.setdefault(key, {}).setdefault(r["method"], []).append(r)
        if steps and not all(m.startswith("torch_") for m in steps):
            layers.append((os.path.basename(path)[:-len(".json")], doc, steps))
        for r in doc["records"]:
            if r["op"] == "kernel":
                name = r["method"][len("torch_"):] if r["method"].startswith("torch_") else r["method"]
                side = "torch" if r["method"].startswith("torch_") else "ubuf"
                kernels.setdefault((name, r.get("model", "-"), r["tp"], r["m"], r["n"]), {}).setdefault(side, []).append(r)
                continue
            if r["op"] == "layer":
                continue
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
    if layers:
        print("\nLayerNormMLP training step (`ubuf demo`), median ms, max over ranks:\n")
        print("| run | device | tp | hidden/ffn/tokens | GEMMs | overlap | no_overlap | no_comm | speedup | hidden share |"
              " init s | first step s | untuned |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, doc, by in sorted(layers, key=lambda e: e[0]):
            o = by.get("overlap", {})
            t = lambda m: ms(by[m]["ms"]) if m in by else "-"
            opt = lambda f, fmt: fmt % o[f] if o.get(f) is not None else "-"
            print(f"| {name} | {doc.get('device', '-')} | {o.get('tp', '-')} | "
                  f"{o.get('hidden', '-')}/{o.get('ffn', '-')}/{o.get('tokens', '-')} | {o.get('gemm_dtype', o.get('dtype', '-'))} | "
                  f"{t('overlap')} | {t('no_overlap')} | {t('no_comm')} | {opt('speedup', '%.2fx')} | "
                  f"{opt('hidden_share', '%.2f')} | {opt('init_s', '%.1f')} | {opt('start_to_first_step_s', '%.1f')} | "
                  f"{opt('gemms_untuned', '%d')} |")
    versus = {k: v for k, v in versus.items() if any(m.startswith("torch_") for m in v) and "overlap" in v}
    if versus:
        print("\nLayerNormMLP training step against PyTorch's (bench/torch/torch_layer.py), median over the files of"
              " each mode's median ms, max over ranks; MFU of ubuf's overlap step and of PyTorch's faster one:\n")
        print("| tp | hidden/ffn/tokens | dtype | rounds | ubuf overlap | no_overlap | no_comm | torch_nccl | torch_async |"
              " overlap / faster torch | no_overlap / torch_nccl | MFU ubuf | MFU torch |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for key in sorted(versus, key=lambda k: tuple(str(x) for x in k)):
            by = versus[key]
            med = {m: statistics.median(r["ms"] for r in rs) for m, rs in by.items()}
            torches = [m for m in ("torch_nccl", "torch_async") if m in med]
            best = min(torches, key=lambda m: med[m])
            mfu = lambda m: "%.1f%%" % (100 * statistics.median(r["mfu"] for r in by[m])) \
                if all(r.get("mfu") is not None for r in by[m]) else "-"
            tp, hidden, ffn, tokens, dtype = key[:5]
            print(f"| {tp} | {hidden}/{ffn}/{tokens} | {dtype} | {len(by['overlap'])} | {ms(med['overlap'])} | "
                  f"{ms(med.get('no_overlap'))} | {ms(med.get('no_comm'))} | {ms(med.get('torch_nccl'))} | "
                  f"{ms(med.get('torch_async'))} | {med['overlap'] / med[best]:.3f} | "
                  f"{'%.3f' % (med['no_overlap'] / med['torch_nccl']) if 'no_overlap' in med and 'torch_nccl' in med else '-'} | "
                  f"{mfu('overlap')} | {mfu(best)} |")
    if kernels:
        print("\nLayer kernels at the layer's per-rank shapes (µs, median over the files of each file's median; % of"
              " the faster copy of the same bytes measured in the same iterations):\n")
        print("| kernel | model | tp | rows×cols | ubuf µs | % of copy | torch µs | torch % of copy | ubuf / torch |")
        print("|---|---|---|---|---|---|---|---|---|")
        order = {k: i for i, k in enumerate(["layernorm_fwd", "layernorm_bwd", "swiglu_fwd", "swiglu_bwd",
                                              "bias_swiglu_fwd", "bias_swiglu_bwd", "gelu_fwd", "gelu_bwd",
                                              "bias_gelu_fwd", "bias_gelu_bwd", "bias_add", "bias_grad",
                                              "fp8_quantize", "fp8_quantize_transpose", "fp8_transpose", "rs_sum",
                                              "rs_sum_f32"])}
        for key in sorted(kernels, key=lambda k: (order.get(k[0], 99), k[0], k[1], k[2])):
            by = kernels[key]
            u, t = by.get("ubuf", []), by.get("torch", [])
            med = lambda rs, f: statistics.median(r[f] for r in rs) if rs else None
            um, tm = med(u, "ms"), med(t, "ms")
            pct = lambda rs: "%.1f" % med(rs, "pct_of_copy_bw") if rs and all("pct_of_copy_bw" in r for r in rs) else "-"
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]}×{key[4]} | {'%.1f' % (um * 1e3) if um else '-'} | "
                  f"{pct(u)} | {'%.1f' % (tm * 1e3) if tm else '-'} | {pct(t)} | "
                  f"{'%.2f' % (um / tm) if um and tm else '-'} |")
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
