#!/usr/bin/env python3
"""Checks scripts/combine-rounds.py without a GPU: rounds made from a stored sweep and its PyTorch file, with known
changes, combine to the expected medians and criteria. Run: python3 scripts/test_combine_rounds.py (the bench
module's tests run it when python3 is on the PATH)."""
import copy
import importlib.util
import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "bench", "results")
spec = importlib.util.spec_from_file_location("combine_rounds", os.path.join(HERE, "combine-rounds.py"))
combine = importlib.util.module_from_spec(spec)
spec.loader.exec_module(combine)


def load(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


class CombineRoundsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sweep = load("2026-11-23-h200x2-sweep-llama3-8b.json")
        self.torch = load("2026-11-23-h200x2-sweep-llama3-8b-torch.json")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def rounds(self, scales):
        """Round files: the stored sweep with every time of round r scaled by scales[r] (ratios unchanged)."""
        paths = []
        for r, scale in enumerate(scales, 1):
            doc = copy.deepcopy(self.sweep)
            for rec in doc["records"]:
                for f in list(rec):
                    if f == "ms" or f.endswith("_ms"):
                        rec[f] *= scale
            paths.append(self.write(f"sweep-r{r}.json", doc))
            t = copy.deepcopy(self.torch)
            for rec in t["records"]:
                rec["ms"] *= scale
            paths.append(self.write(f"torch-sweep-r{r}.json", t))
        return paths

    def run_main(self, *args):
        out = io.StringIO()
        with redirect_stdout(out):
            code = combine.main(list(args))
        return code, out.getvalue()

    def test_times_are_medians_over_rounds_and_paired_ratios_stay(self):
        combined = os.path.join(self.dir.name, "combined.json")
        code, report = self.run_main(*self.rounds([1.0, 3.0, 1.2]), "--out", combined)
        self.assertEqual(0, code, report)
        with open(combined) as f:
            doc = json.load(f)
        self.assertEqual({"ubuf": 3, "torch": 3}, doc["rounds"])
        self.assertEqual(("2x NVIDIA H200", "2026-11-23", "7b1c080"), (doc["device"], doc["date"], doc["commit"]))
        orig = {(r["op"], r["method"], r["m"], r["k"], r["n"]): r for r in self.sweep["records"]}
        for r in doc["records"]:
            if r["op"] in ("ag", "rs") and not r["method"].startswith("torch"):
                o = orig[(r["op"], r["method"], r["m"], r["k"], r["n"])]
                self.assertAlmostEqual(o["ms"] * 1.2, r["ms"])  # the median of 1.0, 3.0, 1.2
                self.assertEqual(3, r["rounds"])
                if "pct_of_ideal" in o:
                    self.assertAlmostEqual(o["pct_of_ideal"], r["pct_of_ideal"], places=6)
                    self.assertAlmostEqual(o["vs_nccl_seq"], r["vs_nccl_seq"], places=6)
        self.assertIn("PASS         C4 auto faster than torch_async where it ran (28 shapes)", report)

    def test_auto_records_name_the_fastest_other_method_and_the_paired_ratio(self):
        combined = os.path.join(self.dir.name, "combined.json")
        code, report = self.run_main(*self.rounds([1.0, 3.0, 1.2]), "--out", combined)
        self.assertEqual(0, code, report)
        with open(combined) as f:
            doc = json.load(f)
        by = {}
        for r in self.sweep["records"]:
            by.setdefault((r["op"], r["m"], r["k"], r["n"]), {})[r["method"]] = r["ms"]
        autos = [r for r in doc["records"] if r["method"] == "auto"]
        self.assertEqual(28, len(autos))
        for r in autos:
            ms = dict(by[(r["op"], r["m"], r["k"], r["n"])])
            a = ms.pop("auto")
            best = min(ms, key=ms.get)
            self.assertEqual(best, r["fastest"])
            self.assertAlmostEqual(a / ms[best], r["auto_over_fastest"])  # each round's ratio is the same
        self.assertFalse([r for r in doc["records"] if r["method"] != "auto" and "fastest" in r])

    def test_a_fault_and_a_slower_than_nccl_shape_are_listed_as_misses(self):
        doc = copy.deepcopy(self.sweep)
        for rec in doc["records"]:
            if rec["method"] == "auto" and rec["op"] == "ag" and rec["m"] == 4096 and rec["n"] == 14336:
                rec["pct_of_ideal"] = 101.0
                rec["vs_nccl_seq"] = 0.9
        code, report = self.run_main(self.write("sweep-r1.json", doc), "--strict")
        self.assertEqual(1, code)
        self.assertIn("miss: ag 4096x4096x14336 auto: 101.0% of ideal", report)
        self.assertIn("miss: ag 4096x4096x14336: 0.9000x NCCL seq", report)
        self.assertIn("NOT MEASURED C4", report)

    def test_auto_running_the_reference_slower_than_nccl_seq_is_a_miss_marked_as_the_same_op(self):
        doc = copy.deepcopy(self.sweep)
        shape = next((r["op"], r["m"], r["k"], r["n"]) for r in doc["records"] if r["method"] == "auto")
        same = [r for r in doc["records"] if (r.get("op"), r.get("m"), r.get("k"), r.get("n")) == shape]
        seq = next(r for r in same if r["method"] == "nccl_seq")
        for r in same:
            if r["method"] == "auto":
                r["ran"] = "nccl"
                r["ms"] = seq["ms"] * 1.05
            elif r["method"] != "nccl_seq":
                r["ms"] = seq["ms"] * 2
        _, report = self.run_main(self.write("sweep-r1.json", doc))
        self.assertIn("auto (nccl) 1.050x the fastest, nccl_seq (the same op as the fastest: noise)", report)

    def test_auto_running_the_fastest_method_slower_than_that_method_is_a_miss_marked_as_the_same_op(self):
        doc = copy.deepcopy(self.sweep)
        shape = next((r["op"], r["m"], r["k"], r["n"]) for r in doc["records"] if r["method"] == "auto")
        same = [r for r in doc["records"] if (r.get("op"), r.get("m"), r.get("k"), r.get("n")) == shape]
        other = next(r for r in same if r["method"] not in ("auto", "nccl_seq") and "torch" not in r["method"])
        for r in same:
            if r["method"] == "auto":
                r["ran"] = other["method"]
                r["ms"] = other["ms"] * 1.05
            elif r is not other:
                r["ms"] = other["ms"] * 2
        code, report = self.run_main(self.write("sweep-r1.json", doc), "--strict")
        self.assertEqual(1, code)  # still a miss: noise or not, the criterion counts it
        self.assertIn(f"auto ({other['method']}) 1.050x the fastest, {other['method']} (the same op as the fastest:"
                      " noise)", report)

    def test_gemm_rounds_give_the_cublaslt_over_torch_ratio(self):
        def gemm_file(method, ms, torch):
            rec = dict(op="gemm", method=method, tp=1, dtype="bf16", m=1024, k=4096, n=3072, ms=ms,
                       timing="sequential")
            doc = dict(device="NVIDIA H200", date="2026-11-24", commit="abc", records=[rec])
            if torch:
                doc["torch"] = "2.11"
            return doc
        paths = [self.write("gemm-r1.json", gemm_file("cublaslt", 1.00, False)),
                 self.write("gemm-r2.json", gemm_file("cublaslt", 1.04, False)),
                 self.write("gemm-r3.json", gemm_file("cublaslt", 1.01, False)),
                 self.write("torch-gemm-r1.json", gemm_file("torch", 1.00, True)),
                 self.write("torch-gemm-r2.json", gemm_file("torch", 0.99, True)),
                 self.write("torch-gemm-r3.json", gemm_file("torch", 1.10, True))]
        code, report = self.run_main(*paths)
        self.assertEqual(0, code, report)
        # medians 1.01 / 1.00
        self.assertIn("PASS         C6 cuBLASLt <= 1.01x torch.matmul on every GEMM shape (1 compared)", report)
        self.assertIn("1.010", report)

    def test_the_input_distribution_comes_from_the_records_when_the_file_has_none(self):
        rec = dict(op="gemm", method="torch", tp=1, dtype="bf16", m=256, k=512, n=256, ms=0.01, timing="sequential",
                   init="ubuf-same")
        torch = dict(device="NVIDIA H100", date="2026-11-25", commit="abc", torch="2.11", records=[rec])
        ours = dict(device="NVIDIA H100", date="2026-11-25", commit="abc",
                    records=[dict(rec, method="cublaslt", init=None)])
        out = os.path.join(self.dir.name, "combined.json")
        code, report = self.run_main("--out", out, self.write("gemm-r1.json", ours),
                                     self.write("torch-gemm-r1.json", torch))
        self.assertEqual(0, code, report)
        with open(out) as f:
            self.assertEqual("ubuf-same", json.load(f)["init"])
        self.assertEqual("normal", combine.init_of(dict(records=[dict(ms=1.0)])))

    def test_a_file_cut_short_is_skipped(self):
        broken = os.path.join(self.dir.name, "sweep-r2.json")
        with open(broken, "w") as f:
            f.write('{"records": [')
        code, report = self.run_main(self.rounds([1.0])[0], broken)
        self.assertEqual(0, code, report)


if __name__ == "__main__":
    unittest.main()
