#!/usr/bin/env python3
"""Merges the round files of an alternating run into one results file, and reports issue 10's acceptance criteria.

    python3 scripts/combine-rounds.py [--out bench/results/DATE-NAME.json] [--strict] FILE...

FILE: results files of the rounds, in any order: ubuf's (`ubuf bench sweep|gemm|ag|rs --out`, e.g. sweep-r1.json,
gemm-r1.json from the `alternate=` stage of .gpu/run-gpu.sh) and the PyTorch baseline's (torch_baseline.py --json,
e.g. torch-sweep-r1.json, torch-gemm-r1.json; told apart by their top-level "torch" field). Each file is one round of
the records it holds; a sweep split over several commands (--models a, then --models b) simply gives more files.

The combined file (--out) is in the results format (bench/results/README.md, "Combined files"): one record per
(op, method, tp, dtype, m, k, n, and for op gemm the timing), with
  - ms, p10_ms, p90_ms and every other *_ms field: the median over the rounds of that field;
  - pct_of_ideal and vs_nccl_seq: the median over the rounds of the round's own ratio (a round times all of one
    shape's candidates in the same shuffled iterations, so its ratios are paired); tflops from the median ms;
  - rounds (how many rounds had the record), ms_rounds (each round's ms, in file order), and for ag/rs records
    pct_of_ideal_rounds, fault_rounds (rounds whose record was above 100.5% of its ideal) and, when the planner's
    choice changed between rounds, ran_rounds;
  - measurement_fault: true when the combined pct_of_ideal is above 100.5;
  - on ag/rs auto records, fastest (the fastest other ubuf method by median ms, nccl_seq counted) and
    auto_over_fastest (the median over rounds of auto's time over the fastest other method's of the same round).
Top level: device, date (the latest run's), commit (of ubuf's files; several joined by ","), torch, cuda and init
(of the baseline's files), files ({"ubuf": N, "torch": N}), rounds (the most rounds of any record, the same way),
sources (the file names), failures (the
baseline's, without repeats) and combined (a one-line description of the above).

The report (stdout) lists per overlap shape: auto's median ms and the method it ran, its % of the honest ideal,
auto vs NCCL sequential, vs torch_seq and vs torch_async (their time over auto's: above 1 means auto is faster; across
processes, so a ratio of the medians over rounds), the fastest measured method and auto's time over it (paired per
round, median), and the cuBLASLt / torch.matmul ratio of the shape's per-rank GEMM; then each criterion with PASS or
FAIL and its misses:
  C1 no record above 100.5% of ideal (combined ubuf records; rounds flagged are listed too)
  C2 auto >= 95% of ideal for M >= 2048, >= 90% at M = 1024
  C3 auto >= 1.00x NCCL sequential on every shape from M = 256
  C4 auto faster than torch_async wherever torch_async ran
  C5 the planner's choice within 2% of the fastest measured method (nccl_seq counted) on >= 95% of shapes
  C6 cuBLASLt GEMM <= 1.01x torch.matmul on every GEMM shape (the "sequential" records of `ubuf bench gemm` and the
     baseline's gemm:M,K,N words; without them, the sweep's in-op GEMM times, marked as indicative)
With --strict the exit code is 1 when a criterion fails (2 for bad input); otherwise 0.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import sys

FAULT_PCT = 100.5
SHAPE_FIELDS = ("op", "method", "tp", "dtype", "m", "k", "n")


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise ValueError(f"{path}: not a results file (no records list)")
    return doc


def is_torch(doc):
    return "torch" in doc or any(str(r.get("method", "")).startswith("torch") for r in doc["records"])


def round_label(path):
    m = re.search(r"r(?:ound)?(\d+)", os.path.basename(path))
    return int(m.group(1)) if m else None


def gemm_timing(r, torch):
    """sequential (one call after another: ubuf bench gemm, the baseline's gemm: words) or interleaved (timed among
    an op's candidates). Older ubuf gemm files have no timing: bench gemm was sequential."""
    return r.get("timing") or ("interleaved" if torch else "sequential")


def key_of(r, torch):
    k = tuple(r[f] for f in SHAPE_FIELDS)
    return k + ((gemm_timing(r, torch),) if r["op"] == "gemm" else ())


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def combine_records(files):
    """{key: combined record} over files [(path, doc, torch)], each file one round; and per key each round's record
    by file index."""
    by_key = {}
    for i, (_, doc, torch) in enumerate(files):
        for r in doc["records"]:
            if not all(f in r for f in SHAPE_FIELDS) or "ms" not in r:
                continue
            by_key.setdefault(key_of(r, torch), {})[i] = r
    combined = {}
    for key, per_file in by_key.items():
        recs = [per_file[i] for i in sorted(per_file)]
        out = dict(recs[0])
        for field in sorted({f for r in recs for f in r if f.endswith("_ms") or f == "ms"}):
            vals = [r.get(field) for r in recs if isinstance(r.get(field), (int, float))]
            if vals:
                out[field] = median(vals)
        if out["op"] == "gemm" and "timing" not in out:
            out["timing"] = key[-1]
        out["rounds"] = len(recs)
        out["ms_rounds"] = [r["ms"] for r in recs]
        if out["op"] == "gemm":
            out["tflops"] = 2.0 * out["m"] * out["n"] * out["k"] / (out["ms"] * 1e-3) / 1e12
        if "pct_of_ideal" in recs[0]:
            pcts = [r["pct_of_ideal"] for r in recs if "pct_of_ideal" in r]
            out["pct_of_ideal"] = median(pcts)
            out["pct_of_ideal_rounds"] = pcts
            faults = sum(1 for p in pcts if p > FAULT_PCT)
            out["fault_rounds"] = faults
            out.pop("measurement_fault", None)
            if out["pct_of_ideal"] > FAULT_PCT:
                out["measurement_fault"] = True
        if "vs_nccl_seq" in recs[0]:
            out["vs_nccl_seq"] = median([r.get("vs_nccl_seq") for r in recs])
        rans = [r.get("ran") for r in recs if "ran" in r]
        if rans:
            out["ran"] = max(set(rans), key=lambda x: (rans.count(x), -rans.index(x)))
            if len(set(rans)) > 1:
                out["ran_rounds"] = rans
        for f in ("timer_valve_releases",):
            if f in out:
                out[f] = sum(r.get(f, 0) for r in recs)
        combined[key] = out
    return combined, by_key


def fastest(files, combined, by_key, shape):
    """For an overlap shape (op, tp, dtype, m, k, n): the fastest ubuf method other than auto by combined median ms
    (nccl_seq counted), and the median over rounds of auto's time over the fastest other method's in the same round
    (the same shuffled iterations); (None, None) without auto or another method."""
    op, tp, dtype, m, k, n = shape
    per_method = {key[1]: rounds for key, rounds in by_key.items()
                  if key[0] == op and key[2:] == (tp, dtype, m, k, n) and not any(files[i][2] for i in rounds)}
    auto = per_method.pop("auto", {})
    if not per_method or not auto:
        return None, None
    best = min(per_method, key=lambda mth: combined[(op, mth, tp, dtype, m, k, n)]["ms"])
    ratios = []
    for i, a in auto.items():
        others = [rs[i]["ms"] for rs in per_method.values() if i in rs]
        if others:
            ratios.append(a["ms"] / min(others))
    return best, median(ratios)


def mark_fastest(files, combined, by_key):
    """Adds to every ag/rs auto record "fastest" (the fastest other method) and "auto_over_fastest" (see fastest)."""
    for key, r in combined.items():
        if key[0] in ("ag", "rs") and key[1] == "auto":
            best, ratio = fastest(files, combined, by_key, (key[0],) + key[2:])
            if best is not None and ratio is not None:
                r["fastest"] = best
                r["auto_over_fastest"] = ratio


def init_of(doc):
    """A PyTorch file's input distribution: its own field, else its records' (torch_gemm_serve.py writes it per
    record), else "normal" (the early baseline files, which said nothing and used torch.randn)."""
    if doc.get("init"):
        return doc["init"]
    inits = sorted({r["init"] for r in doc.get("records", []) if r.get("init")})
    return ",".join(inits) if inits else "normal"


def joined(values):
    seen = []
    for v in values:
        if v is not None and v not in seen:
            seen.append(v)
    return ",".join(str(v) for v in seen) if seen else "unknown"


def combined_doc(files, combined):
    ubuf = [d for _, d, t in files if not t]
    torch = [d for _, d, t in files if t]
    dates = sorted(d.get("date") for _, d, _ in files if d.get("date"))
    doc = {
        "device": joined(d.get("device") for d in ubuf) if ubuf else joined(d.get("device") for d in torch),
        "date": dates[-1] if dates else datetime.date.today().isoformat(),
        "commit": joined(d.get("commit") for d in ubuf) if ubuf else joined(d.get("commit") for d in torch),
    }
    if torch:
        doc["torch"] = joined(d.get("torch") for d in torch)
        doc["cuda"] = joined(d.get("cuda") for d in torch)
        doc["init"] = joined(init_of(d) for d in torch)
    doc["files"] = {"ubuf": len(ubuf), "torch": len(torch)}
    recs = list(combined.values())
    doc["rounds"] = {"ubuf": max([r["rounds"] for r in recs if not r["method"].startswith("torch")], default=0),
                     "torch": max([r["rounds"] for r in recs if r["method"].startswith("torch")], default=0)}
    doc["sources"] = [os.path.basename(p) for p, _, _ in files]
    doc["combined"] = ("per record: median over rounds of every *_ms field; pct_of_ideal and vs_nccl_seq the median"
                       " of each round's own ratio; rounds, ms_rounds (scripts/combine-rounds.py)")
    failures = []
    for d in torch:
        for f in d.get("failures", []):
            if f not in failures:
                failures.append(f)
    if torch:
        doc["failures"] = failures
    doc["records"] = list(combined.values())
    return doc


class Report:
    def __init__(self, files, combined, by_key):
        self.files, self.combined, self.by_key = files, combined, by_key
        self.lines = []
        self.failed = []

    def say(self, s=""):
        self.lines.append(s)

    def get(self, op, method, tp, dtype, m, k, n, *timing):
        return self.combined.get((op, method, tp, dtype, m, k, n) + tuple(timing))

    def shapes(self):
        """The ubuf overlap shapes (op, tp, dtype, m, k, n) that have an auto record, in op, M, K, N order."""
        seen = {(k[0],) + k[2:] for k, r in self.combined.items()
                if k[0] in ("ag", "rs") and k[1] == "auto" and not str(k[1]).startswith("torch")}
        return sorted(seen, key=lambda s: (s[0], s[3], s[4], s[5], s[1], s[2]))

    def fastest(self, shape):
        """(fastest method other than auto by median ms, median over rounds of auto / the fastest in that round)."""
        return fastest(self.files, self.combined, self.by_key, shape)

    def gemm_ratio(self, tp, dtype, m, k, n):
        """(cuBLASLt / torch.matmul median ms, how): sequential records first, else the in-op GEMM times."""
        lt = self.get("gemm", "cublaslt", 1, dtype, m, k, n, "sequential")
        pt = self.get("gemm", "torch", 1, dtype, m, k, n, "sequential")
        if lt and pt:
            return lt["ms"] / pt["ms"], "sequential"
        ubuf_gemm = [r.get("gemm_ms") for key, r in self.combined.items()
                     if key[0] in ("ag", "rs") and key[1] == "nccl_seq" and key[2:] == (tp, dtype, m, k, n)]
        pt = self.get("gemm", "torch", 1, dtype, m, k, n, "interleaved")
        if ubuf_gemm and ubuf_gemm[0] and pt:
            return ubuf_gemm[0] / pt["ms"], "in-op"
        return None, None

    def run(self):
        shapes = self.shapes()
        self.say(f"files: {sum(1 for f in self.files if not f[2])} of ubuf, {sum(1 for f in self.files if f[2])} of"
                 f" the PyTorch baseline; rnds: the rounds a shape's auto record had")
        self.say()
        head = (f"{'op':2} {'M':>6} {'K':>6} {'N':>6} {'auto ms':>8} {'ran':22} {'%ideal':>6} {'xNCCL':>6} "
                f"{'xT_seq':>6} {'xT_async':>8} {'fastest':>20} {'auto/f':>6} {'lt/torch':>8} {'rnds':>4}")
        self.say(head)
        c2, c3, c4, c5, c1 = [], [], [], [], []
        c5_total = 0
        for shape in shapes:
            op, tp, dtype, m, k, n = shape
            auto = self.get(op, "auto", tp, dtype, m, k, n)
            tseq = self.get(op, "torch_seq", tp, dtype, m, k, n)
            tasync = self.get(op, "torch_async", tp, dtype, m, k, n)
            best, auto_over_best = self.fastest(shape)
            ratio, how = self.gemm_ratio(tp, dtype, m, k, n)
            pct = auto.get("pct_of_ideal")
            vs_nccl = auto.get("vs_nccl_seq")
            x_seq = tseq["ms"] / auto["ms"] if tseq else None
            x_async = tasync["ms"] / auto["ms"] if tasync else None
            name = f"{op} {m}x{k}x{n}"

            def f(v, fmt):
                return format(v, fmt) if v is not None else "-"
            self.say(f"{op:2} {m:6d} {k:6d} {n:6d} {auto['ms']:8.4f} {str(auto.get('ran', '-'))[:22]:22} "
                     f"{f(pct, '6.1f')} {f(vs_nccl, '6.3f')} {f(x_seq, '6.3f')} {f(x_async, '8.3f')} "
                     f"{str(best or '-')[:20]:>20} {f(auto_over_best, '6.3f')} "
                     f"{f(ratio, '8.3f')}{'*' if how == 'in-op' else ' '}{auto['rounds']:4d}")
            need = 95.0 if m >= 2048 else 90.0 if m >= 1024 else None
            if need is not None and pct is not None and pct < need:
                c2.append(f"{name}: {pct:.1f}% < {need:.0f}% (ran {auto.get('ran')})")
            if m >= 256 and vs_nccl is not None and vs_nccl < 1.0:
                same = " (the same op as the reference: noise)" if auto.get("ran") == "nccl" else ""
                c3.append(f"{name}: {vs_nccl:.4f}x NCCL seq (ran {auto.get('ran')}){same}")
            if x_async is not None and x_async <= 1.0:
                c4.append(f"{name}: torch_async {tasync['ms']:.4f} ms vs auto {auto['ms']:.4f} ms ({x_async:.3f}x)")
            if auto_over_best is not None:
                c5_total += 1
                if auto_over_best > 1.02:
                    # Counted all the same: the same op timed in two slots is noise, but a miss by the measure.
                    ran = auto.get("ran")
                    same = (" (the same op as the fastest: noise)"
                            if ran == best or (ran == "nccl" and best == "nccl_seq") else "")
                    c5.append(f"{name}: auto ({auto.get('ran')}) {auto_over_best:.3f}x the fastest, {best}{same}")
        for key, r in self.combined.items():
            if key[0] in ("ag", "rs") and not key[1].startswith("torch") and r.get("pct_of_ideal", 0) > FAULT_PCT:
                c1.append(f"{key[0]} {key[4]}x{key[5]}x{key[6]} {key[1]}: {r['pct_of_ideal']:.1f}% of ideal")
        flagged = [f"{key[0]} {key[4]}x{key[5]}x{key[6]} {key[1]}: {r['fault_rounds']} of {r['rounds']} rounds"
                   for key, r in self.combined.items()
                   if key[0] in ("ag", "rs") and not key[1].startswith("torch") and r.get("fault_rounds")]
        self.say("(xNCCL, xT_seq, xT_async: their time / auto's, above 1 = auto faster; auto/f: auto's time over the"
                 " fastest other method's; lt/torch: cuBLASLt / torch.matmul, * = in-op GEMM times, indicative)")
        self.say()
        self.criterion("C1 no ubuf record above 100.5% of ideal", c1, len(shapes) > 0,
                       extra=[f"(rounds flagged, not failing by themselves) {x}" for x in flagged])
        self.criterion("C2 auto >= 95% of ideal for M >= 2048, >= 90% at M = 1024", c2, len(shapes) > 0)
        self.criterion("C3 auto >= 1.00x NCCL seq from M = 256", c3, len(shapes) > 0)
        ran_async = sum(1 for s in shapes if self.get(s[0], "torch_async", *s[1:]))
        self.criterion(f"C4 auto faster than torch_async where it ran ({ran_async} shapes)", c4, ran_async > 0)
        share = 100.0 * (c5_total - len(c5)) / c5_total if c5_total else 0.0
        self.criterion(f"C5 planner within 2% of the fastest on >= 95% of shapes: {c5_total - len(c5)} of {c5_total}"
                       f" ({share:.1f}%)", c5, c5_total > 0, passed=c5_total > 0 and share >= 95.0)
        self.gemm_criterion(shapes)
        return self.lines

    def gemm_criterion(self, shapes):
        misses, rows = [], 0
        gemm_shapes = sorted({key[2:7] for key in self.combined
                              if key[0] == "gemm" and key[1] == "cublaslt" and key[-1] == "sequential"},
                             key=lambda s: (s[2], s[3], s[4]))
        if gemm_shapes:
            self.say("GEMM (sequential, one GPU): M K N, cuBLASLt ms, torch.matmul ms, ratio, TFLOP/s of cuBLASLt")
            for tp, dtype, m, k, n in gemm_shapes:
                lt = self.get("gemm", "cublaslt", tp, dtype, m, k, n, "sequential")
                pt = self.get("gemm", "torch", tp, dtype, m, k, n, "sequential")
                ratio = lt["ms"] / pt["ms"] if pt else None
                self.say(f"  {m:6d} {k:6d} {n:6d} {lt['ms']:9.4f} {pt['ms'] if pt else float('nan'):9.4f} "
                         f"{ratio if ratio else float('nan'):7.3f} {lt.get('tflops', 0):7.1f}"
                         f"  {lt.get('algorithm', '')}")
                if ratio is None:
                    misses.append(f"gemm {m}x{k}x{n}: no torch.matmul record")
                else:
                    rows += 1
                    if ratio > 1.01:
                        misses.append(f"gemm {m}x{k}x{n}: cuBLASLt {ratio:.3f}x torch.matmul")
            wanted = {(s[2], s[3], s[4], s[5]) for s in shapes}
            have = {(s[1], s[2], s[3], s[4]) for s in gemm_shapes}
            for dtype, m, k, n in sorted(wanted - have, key=lambda s: s[1:]):
                misses.append(f"gemm {m}x{k}x{n}: a sweep shape's GEMM without a cuBLASLt gemm record")
            self.criterion(f"C6 cuBLASLt <= 1.01x torch.matmul on every GEMM shape ({rows} compared)", misses,
                           rows > 0)
            return
        for shape in shapes:
            ratio, how = self.gemm_ratio(*shape[1:])
            if ratio is not None:
                rows += 1
                if ratio > 1.01:
                    misses.append(f"{shape[0]} {shape[3]}x{shape[4]}x{shape[5]}: in-op GEMM {ratio:.3f}x "
                                  f"torch.matmul")
        self.criterion(f"C6 cuBLASLt <= 1.01x torch.matmul (indicative: in-op GEMM times, {rows} shapes; run the"
                       f" gemm alternation for the real check)", misses, rows > 0)

    def criterion(self, title, misses, measured, passed=None, extra=()):
        if passed is None:
            passed = measured and not misses
        verdict = "PASS" if passed else ("FAIL" if measured else "NOT MEASURED")
        if not passed:
            self.failed.append(title)
        self.say(f"{verdict:12} {title}" + (f": {len(misses)} misses" if misses else ""))
        for miss in misses:
            self.say(f"    miss: {miss}")
        for x in extra:
            self.say(f"    {x}")


def main(argv):
    p = argparse.ArgumentParser(prog="combine-rounds.py", description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", metavar="FILE", help="round files of ubuf and of the PyTorch baseline")
    p.add_argument("--out", help="write the combined results file here (e.g. bench/results/DATE-NAME.json)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a criterion fails")
    a = p.parse_args(argv)
    files = []
    for path in a.files:
        try:
            doc = load(path)
        except (OSError, ValueError) as e:  # a round cut short mid-write, say: said, and left out
            print(f"combine-rounds: skipping {path}: {e}", file=sys.stderr)
            continue
        files.append((path, doc, is_torch(doc)))
    if not files:
        print("combine-rounds: no readable results file", file=sys.stderr)
        return 2
    files.sort(key=lambda f: (f[2], round_label(f[0]) or 0, f[0]))
    combined, by_key = combine_records(files)
    mark_fastest(files, combined, by_key)
    doc = combined_doc(files, combined)
    report = Report(files, combined, by_key)
    print("\n".join(report.run()))
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"\nwrote {len(doc['records'])} records of {len(files)} files to {a.out}")
    return 1 if a.strict and report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
