#!/usr/bin/env python3
"""Checks scripts/results-tables.py without a GPU: docs/results.md's generated tables are what the results files in
bench/results/ give, --update rewrites a stale block and only the blocks, --check finds drift, and the tables carry the
stored numbers. Run: python3 scripts/test_results_tables.py (the bench module's tests run it when python3 is on the
PATH)."""
import importlib.util
import io
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
spec = importlib.util.spec_from_file_location("results_tables", os.path.join(HERE, "results-tables.py"))
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)

OPMODEL = ("bench/results/2026-11-23-h200x2-opmodel-new-ag-round2.json bench/results/2026-11-23-h200x2-opmodel-new-rs.json"
           " --torch bench/results/2026-11-23-h200x2-opmodel-torch.json")
DEMO = "bench/results/2026-11-27-h100x4-demo-ff65685/demo-tp*.json"


def quiet(fn, *args, **kwargs):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = fn(*args, **kwargs)
    return code, out.getvalue(), err.getvalue()


class ResultsTablesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def page(self, text):
        path = os.path.join(self.dir.name, "page.md")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_docs_results_is_in_step_with_the_results_files(self):
        code, _, err = quiet(tables.update, os.path.join(ROOT, "docs", "results.md"), check=True)
        self.assertEqual(0, code, err)

    def test_update_rewrites_a_stale_block_and_nothing_else(self):
        text = ("# Page\n\nprose before\n\n<!-- results-tables: " + OPMODEL + " -->\n| stale | table |\n"
                "<!-- /results-tables -->\n\nprose after, naming `<!-- results-tables: ... -->` in passing\n")
        path = self.page(text)
        code, _, err = quiet(tables.update, path, check=True)
        self.assertEqual(1, code)
        self.assertIn("differ from the files", err)
        self.assertEqual(0, quiet(tables.update, path)[0])
        with open(path) as f:
            new = f.read()
        self.assertTrue(new.startswith("# Page\n\nprose before\n\n<!-- results-tables: "))
        self.assertTrue(new.endswith("<!-- /results-tables -->\n\nprose after, naming `<!-- results-tables: ... -->`"
                                     " in passing\n"))
        self.assertNotIn("| stale | table |", new)
        # The 2x H200 AG row at 16384x8192x8192: auto ran the ring, 3.014 ms, 95.4% of the ideal, 1.14x NCCL.
        self.assertIn("| 16384×8192×8192 | 2.875 | 0.443 | 3.449 | 3.634 | 3.485 | **3.014** (ring) | 95.4 | 1.14x |", new)
        self.assertEqual(0, quiet(tables.update, path, check=True)[0], "in step after --update")

    def test_the_demo_table_has_a_row_per_run_and_skips_the_traces(self):
        body = tables.render(DEMO)
        rows = [l for l in body.splitlines() if l.startswith("| demo-")]
        self.assertEqual(13, len(rows), body)
        self.assertIn("| demo-tp4-8b | 4x NVIDIA H100 80GB HBM3 | 4 | 4096/14336/8192 | bf16 | 4.500 | 4.912 | 4.030 |"
                      " 1.09x | 0.47 |", body)
        self.assertNotIn("trace.json", body)

    def test_a_page_without_blocks_or_a_marker_naming_no_file_is_an_error(self):
        self.assertEqual(1, quiet(tables.update, self.page("# nothing generated here\n"))[0])
        with self.assertRaises(ValueError):
            quiet(tables.update, self.page("<!-- results-tables: bench/results/no-such-*.json -->\n"
                                           "<!-- /results-tables -->\n"))

    def test_printing_tables_to_stdout_is_unchanged(self):
        ag = os.path.join(ROOT, "bench", "results", "2026-11-23-h200x2-opmodel-new-ag-round2.json")
        code, out, _ = quiet(tables.main, [ag])
        self.assertEqual(0, code)
        self.assertIn("AG (tp=2, bf16), ms:", out)
        self.assertEqual(2, quiet(tables.main, [])[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
