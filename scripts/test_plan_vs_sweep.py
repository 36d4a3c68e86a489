#!/usr/bin/env python3
"""Checks scripts/plan-vs-sweep.py on synthetic warm-up and combined files: candidates matched by their canonical
label ("ran") and nccl against nccl_seq, the ratios and the 3% count, the planner's choice judged by the benchmark's
times, shapes without planner times left out, and bad input refused. Run: python3 scripts/test_plan_vs_sweep.py
(the bench module's tests run it when python3 is on the PATH)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "plan-vs-sweep.py")


def rec(op, m, method, ms, **extra):
    return dict(op=op, tp=4, dtype="bf16", m=m, k=1024, n=4096, method=method, ms=ms, **extra)


class PlanVsSweepTest(unittest.TestCase):
    def run_script(self, warmup, combined, *rounds):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            docs = [("warmup.json", warmup), ("combined.json", combined)]
            docs += [(f"r{i + 1}.json", r) for i, r in enumerate(rounds)]
            for name, doc in docs:
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(doc if isinstance(doc, str) else json.dumps(doc))
                paths.append(path)
            return subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True)

    def test_matches_candidates_and_judges_the_choice(self):
        warmup = {"records": [
            rec("rs", 4096, "auto", 1.0, ran="scatter:sub=2,lowp=1", planner_source="measured",
                planner_ms={"nccl": 0.50, "scatter:sub=2,lowp=1": 0.40, "ring:sub=4,lowp=1": 0.45,
                            "oneshot": 0.60}),
            rec("rs", 8192, "auto", 1.0, ran="nccl", planner_source="cache"),   # nothing measured: left out
        ]}
        combined = {"records": [
            rec("rs", 4096, "nccl_seq", 0.51),
            rec("rs", 4096, "auto", 0.41, ran="scatter:sub=2,lowp=1"),
            rec("rs", 4096, "scatter:sub=2,lowp=1", 0.42, ran="scatter:sub=2,lowp=1"),
            rec("rs", 4096, "ring:lowp=1,sub=4", 0.40, ran="ring:sub=4,lowp=1"),   # another spelling, same candidate
            rec("rs", 8192, "nccl_seq", 0.9),
        ]}
        p = self.run_script(warmup, combined)
        self.assertEqual(0, p.returncode, p.stderr)
        lines = p.stdout.splitlines()
        row = [l for l in lines if l.startswith("rs ") and " 4096 " in l]
        self.assertEqual(1, len(row), p.stdout)
        self.assertIn("scatter:sub=2,lowp=1", row[0])
        self.assertIn("   3 ", row[0])                      # nccl, scatter and ring shared; oneshot only planned
        self.assertIn("1.050x the fastest", row[0])          # 0.42 against ring's 0.40
        self.assertFalse(any(" 8192 " in l for l in lines if l.startswith("rs ")), p.stdout)
        # ratios 0.50/0.51, 0.40/0.42, 0.45/0.40: two within 3%? 0.980 yes, 0.952 no, 1.125 no
        self.assertIn("within 3%: 1 of 3", p.stdout)
        self.assertIn("fastest shared candidate: 0 of 1", p.stdout)
        print("ok: candidates matched by label, ratios, the 3% count and the choice judged")

    def test_the_rounds_agreement_is_the_noise_floor_of_the_same_candidates(self):
        warmup = {"records": [rec("rs", 4096, "auto", 1.0, ran="oneshot", planner_source="measured",
                                  planner_ms={"nccl": 0.50, "oneshot": 0.40, "ring": 0.45})]}
        combined = {"records": [rec("rs", 4096, "nccl_seq", 0.50), rec("rs", 4096, "oneshot", 0.40, ran="oneshot"),
                                rec("rs", 4096, "pipeline", 0.70, ran="pipeline")]}   # pipeline: not planned
        r1 = {"records": [rec("rs", 4096, "nccl_seq", 0.50), rec("rs", 4096, "oneshot", 0.40, ran="oneshot"),
                          rec("rs", 4096, "pipeline", 0.70, ran="pipeline")]}
        r2 = {"records": [rec("rs", 4096, "nccl_seq", 0.55), rec("rs", 4096, "oneshot", 0.41, ran="oneshot"),
                          rec("rs", 4096, "pipeline", 0.90, ran="pipeline")]}
        p = self.run_script(warmup, combined, r1, r2)
        self.assertEqual(0, p.returncode, p.stderr)
        # shared: nccl (0.55/0.50 = 1.10, no) and oneshot (0.41/0.40 = 1.025, yes); pipeline is not shared
        self.assertIn("own 2 rounds on the same candidates: within 3% of each other (slowest over fastest round) on"
                      " 1 of 2 (50%), median spread 1.062", p.stdout)
        p = self.run_script(warmup, combined, r1)
        self.assertEqual(2, p.returncode)
        self.assertIn("two or more round files", p.stderr)
        print("ok: the rounds against each other on the shared candidates")

    def test_bad_input_is_refused(self):
        p = self.run_script("not json", {"records": []})
        self.assertEqual(2, p.returncode)
        self.assertIn("cannot read", p.stderr)
        p = self.run_script({"records": {}}, {"records": []})
        self.assertEqual(2, p.returncode)
        self.assertIn("not a results file", p.stderr)
        p = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertEqual(2, p.returncode)
        print("ok: unreadable files and missing arguments are refused")


if __name__ == "__main__":
    unittest.main(verbosity=1)
