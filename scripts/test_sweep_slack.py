#!/usr/bin/env python3
"""Checks scripts/sweep-slack.py on a synthetic combined file: the regime from the ideal's terms, the chunking share
of a GEMM-bound record's slack (capped at the slack), none for a communication-bound one, records below --min-m or
without the terms left out, the --rows listing, and a file that is not a combined sweep refused. Run: python3
scripts/test_sweep_slack.py (the bench module's tests run it when python3 is on the PATH)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "sweep-slack.py")


def auto(op, m, ms, gemm, chunked, comm, **extra):
    ideal = max(min(gemm, chunked), comm)
    return dict(op=op, method="auto", tp=4, m=m, k=1024, n=4096, ran="scatter:sub=1,lowp=1", ms=ms, gemm_ms=gemm,
                gemm_chunked_ms=chunked, comm_ms=comm, ideal_ms=ideal, pct_of_ideal=100 * ideal / ms, **extra)


class SweepSlackTest(unittest.TestCase):
    def run_script(self, doc, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sweep.json")
            with open(path, "w") as f:
                f.write(doc if isinstance(doc, str) else json.dumps(doc))
            return subprocess.run([sys.executable, SCRIPT, *args, path], capture_output=True, text=True)

    def table(self, out):
        return {tuple(l.split()[:2]): l.split()[2:] for l in out.splitlines() if l[:3] in ("ag ", "rs ")}

    def test_splits_the_slack_by_regime(self):
        doc = {"records": [
            # GEMM-bound: ideal 1.000, slack 0.100, chunks 0.040 slower than the GEMM: 40 us chunking, 60 rest
            auto("rs", 4096, 1.100, 1.000, 1.040, 0.500),
            # GEMM-bound, chunks slower than the whole slack: chunking capped at the slack (20 us), rest 0
            auto("rs", 8192, 2.020, 2.000, 2.300, 1.000),
            # communication-bound: ideal = comm 0.400, slack 0.060, all of it the rest
            auto("rs", 2048, 0.460, 0.300, 0.330, 0.400),
            auto("rs", 1024, 0.900, 0.100, 0.110, 0.200),                     # below --min-m
            dict(op="rs", method="auto", m=4096, ms=1.0, pct_of_ideal=50.0),  # no terms
            dict(auto("rs", 4096, 1.0, 1.0, 1.0, 0.5), method="ring"),        # not auto
        ]}
        p = self.run_script(doc)
        self.assertEqual(0, p.returncode, p.stderr)
        t = self.table(p.stdout)
        self.assertEqual(["2", "95.0", "60.0", "30.0", "30.0"], t[("rs", "GEMM-bound")], p.stdout)
        self.assertEqual(["1", "87.0", "60.0", "0.0", "60.0"], t[("rs", "comm-bound")], p.stdout)
        self.assertNotIn(("ag", "GEMM-bound"), t)
        p = self.run_script(doc, "--min-m", "1024", "--rows")
        summary = self.table(p.stdout.split("\n\n")[0])
        self.assertEqual(["2", "54.6", "380.0", "0.0", "380.0"], summary[("rs", "comm-bound")])
        rows = [l for l in p.stdout.splitlines() if l.startswith("rs ") and "scatter" in l]
        self.assertEqual(4, len(rows), p.stdout)
        row = [l for l in rows if l.split()[1] == "8192"][0].split()
        self.assertEqual(["20.0", "20.0", "0.0"], row[-3:])
        print("ok: regimes, the capped chunking share, filters and rows")

    def test_refuses_what_is_not_a_combined_sweep(self):
        p = self.run_script("[1, 2]")
        self.assertNotEqual(0, p.returncode)
        self.assertIn("not a combined sweep file", p.stderr)
        p = self.run_script({"records": []})
        self.assertEqual(0, p.returncode)
        self.assertIn("no auto record", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
