#!/usr/bin/env python3
"""Checks the model-shape sweep's table of scripts/results-tables.py (--sweep) on a synthetic record set: a row per
shape named by its model GEMMs, % of ideal, auto against NCCL sequential and PyTorch async-TP, the planner's choice
against the fastest other method of the same iterations with the 2% verdict, the counts and the misses; and that its
copy of the models is ModelShapes.java's. Run: python3 scripts/test_sweep_tables.py (the bench module's tests run it
when python3 is on the PATH)."""
import importlib.util
import io
import json
import os
import re
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
spec = importlib.util.spec_from_file_location("results_tables", os.path.join(HERE, "results-tables.py"))
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)


def auto(op, tp, m, k, n, ms, ran, pct, vs_nccl, **extra):
    return dict(op=op, method="auto", tp=tp, dtype="bf16", m=m, k=k, n=n, ms=ms, ran=ran, pct_of_ideal=pct,
                vs_nccl_seq=vs_nccl, ideal_ms=ms * pct / 100, gemm_ms=0.5, comm_ms=0.1, nccl_seq_ms=ms * vs_nccl,
                **extra)


def other(op, tp, m, k, n, method, ms):
    return dict(op=op, method=method, tp=tp, dtype="bf16", m=m, k=k, n=n, ms=ms)


class SweepTablesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, records, **top):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(dict(dict(device="4x NVIDIA H100 80GB HBM3", date="2026-11-28", commit="abc1234"), **top,
                           records=records), f)
        return path

    def run_tables(self, *args):
        out = io.StringIO()
        with redirect_stdout(out):
            code = tables.main(list(args))
        return code, out.getvalue()

    def combined(self):
        """A combined tp 4 file: Llama-3-8B QKV (a miss of the 2%), Llama-3-8B FC2 (= Mixtral's), GPT-3 proj, and a
        shape of no model; PyTorch's records beside them, one of them faster than auto."""
        return self.write("sweep-tp4.json", [
            auto("ag", 4, 1024, 4096, 1536, 0.100, "ring", 80.0, 1.25, rounds=3, fastest="aggregate",
                 auto_over_fastest=1.05),
            other("ag", 4, 1024, 4096, 1536, "nccl_seq", 0.125),
            other("ag", 4, 1024, 4096, 1536, "torch_async", 0.300),
            auto("rs", 4, 8192, 3584, 4096, 0.400, "ring:sub=4", 95.0, 1.10, rounds=3, fastest="ring:sub=4",
                 auto_over_fastest=1.004, measurement_fault=True),
            other("rs", 4, 8192, 3584, 4096, "torch_async", 0.380),
            auto("rs", 4, 16384, 3072, 12288, 3.000, "pipeline", 97.0, 0.98, rounds=2, fastest="nccl_seq",
                 auto_over_fastest=1.01),
            auto("ag", 4, 2048, 1000, 1000, 0.050, "nccl", 50.0, 1.00, rounds=3),
        ], torch="2.11.0", rounds={"ubuf": 3, "torch": 3})

    def test_a_row_per_shape_named_by_its_model_gemms(self):
        code, out = self.run_tables("--sweep", self.combined())
        self.assertEqual(0, code)
        self.assertIn("Model-shape sweep, tp 4, bf16: 4x NVIDIA H100 80GB HBM3, 2026-11-28, commit abc1234, PyTorch"
                      " 2.11.0; medians over 2 to 3 alternating rounds.", out)
        self.assertIn("| llama3-8b qkv | ag | 1024×4096×1536 | **0.100** (ring) | 80.0 | 1.25x | 3.00x | aggregate |"
                      " 1.050 | **no** |", out)
        self.assertIn("| llama3-8b / mixtral-8x7b-expert fc2 | rs | 8192×3584×4096 | **0.400** (ring:sub=4) |"
                      " 95.0 (!) | 1.10x | 0.95x | ring:sub=4 | 1.004 | yes |", out)
        self.assertIn("| gpt3-175b proj | rs | 16384×3072×12288 | **3.000** (pipeline) | 97.0 | 0.98x | - |"
                      " nccl_seq | 1.010 | yes |", out)
        self.assertIn("| - | ag | 2048×1000×1000 | **0.050** (nccl) | 50.0 | 1.00x | - | - | - | - |", out)
        rows = [line.split(" | ")[0] for line in out.splitlines()
                if line.startswith("| ") and "| **" in line and not line.startswith("| GEMM")]
        self.assertEqual(["| llama3-8b qkv", "| llama3-8b / mixtral-8x7b-expert fc2", "| gpt3-175b proj", "| -"], rows,
                         "in model order, then GEMM, then M; shapes of no model last")

    def test_counts_and_misses(self):
        _, out = self.run_tables("--sweep", self.combined())
        self.assertIn("auto within 2% of the fastest other method measured in the same iterations: 2 of 3 shapes"
                      " (67%); at least as fast as NCCL sequential: 3 of 4; faster than PyTorch async-TP: 1 of 2.", out)
        self.assertIn("- llama3-8b qkv (ag 1024×4096×1536): auto (ring) 1.050x aggregate", out)
        self.assertEqual(1, out.count("\n- "))

    def test_one_round_file_compares_auto_with_its_own_records(self):
        path = self.write("sweep-r1.json", [
            auto("ag", 2, 4096, 8192, 5120, 1.00, "ring", 90.0, 1.2),
            other("ag", 2, 4096, 8192, 5120, "nccl_seq", 1.20),
            other("ag", 2, 4096, 8192, 5120, "oneshot", 0.97),
            other("ag", 2, 4096, 8192, 5120, "ring", 1.01),
        ])
        torch = self.write("torch-sweep-r1.json", [other("ag", 2, 4096, 8192, 5120, "torch_async", 1.5)],
                           torch="2.11.0")
        _, out = self.run_tables("--sweep", path, torch)
        self.assertIn("commit abc1234; one round.", out)
        self.assertIn("| llama3-70b qkv | ag | 4096×8192×5120 | **1.000** (ring) | 90.0 | 1.20x | 1.50x | oneshot |"
                      " 1.031 | **no** |", out)

    def test_each_tp_gets_its_table_and_a_marker_renders_it(self):
        two = self.write("sweep-tp2.json", [auto("ag", 2, 1024, 4096, 3072, 0.1, "ring", 80.0, 1.2, rounds=2,
                                                 fastest="ring", auto_over_fastest=1.0)])
        _, out = self.run_tables("--sweep", two, self.combined())
        self.assertLess(out.index("Model-shape sweep, tp 2"), out.index("Model-shape sweep, tp 4"))
        self.assertIn("| llama3-8b qkv | ag | 1024×4096×3072 |", out)
        rel = os.path.relpath(two, ROOT)
        self.assertEqual(out.split("Model-shape sweep, tp 4")[0].strip(),
                         tables.render("--sweep " + rel).strip())
        self.assertEqual(2, self.run_tables("--sweep")[0])

    def test_the_models_are_those_of_model_shapes_java(self):
        path = os.path.join(ROOT, "bench", "src", "main", "java", "dev", "ubuf", "bench", "ModelShapes.java")
        with open(path) as f:
            java = f.read()
        found = re.findall(r'new ModelShapes\("([^"]+)", (\d+), (\d+), (\d+), (\d+), (\d+), (true|false), '
                           r'(true|false)\)', java)
        self.assertEqual([(n, *map(int, v[:5]), g == "true", a == "true") for n, *v, g, a in found],
                         [tuple(m) for m in tables.SWEEP_MODELS])


if __name__ == "__main__":
    unittest.main(verbosity=2)
