#!/usr/bin/env python3
"""Checks scripts/gpu-lanes.sh without a GPU: a fake bundle whose run-gpu-watched.sh records the devices and the
class regex of each part. Every *GpuTest class of the tests module runs exactly once in the whole suite, exactly once
across halves 1 and 2, the tests that read the device's free memory have GPUs 0,1 to themselves, a timeout still
leaves feeds.tgz, and a bad argument is refused. Run: python3 scripts/test_gpu_lanes.py (the bench module's tests run
it when python3 is on the PATH)."""
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FAKE_WATCHED = r'''#!/usr/bin/env bash
mkdir -p "$OUT"
echo "$CUDA_VISIBLE_DEVICES|${1#tests=}" > "$OUT/tests.txt"
sleep "${FAKE_SLEEP_S:-0}"
echo "[ 1 tests successful ]" > "$OUT/tests-summary.txt"
'''


def gpu_test_classes():
    """Every module's *GpuTest class, by its fully qualified name (the bundle runs them all)."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "*", "src", "test", "java", "**", "*GpuTest.java"), recursive=True):
        with open(path) as f:
            text = f.read()
        if re.search(r"^\s*(public\s+)?(final\s+)?class\s+\w+GpuTest\b", text, re.M):
            package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)
            names.add(package + "." + os.path.basename(path)[:-len(".java")])
    return names


class GpuLanesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpu-lanes-test-")
        self.bundle = os.path.join(self.tmp, "bundle")
        os.makedirs(self.bundle)
        shutil.copy(os.path.join(HERE, "gpu-lanes.sh"), self.bundle)
        with open(os.path.join(self.bundle, "java.sh"), "w") as f:
            f.write("#!/usr/bin/env bash\nexit 0\n")
        with open(os.path.join(self.bundle, "run-gpu-watched.sh"), "w") as f:
            f.write(FAKE_WATCHED)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_lanes(self, *args, timeout=None, sleep=0):
        out = os.path.join(self.tmp, "out-" + "-".join(args or ("all",)))
        cmd = ["bash", os.path.join(self.bundle, "gpu-lanes.sh"), *args]
        if timeout:
            cmd = ["timeout", "-k", "5", str(timeout)] + cmd
        env = dict(os.environ, OUT=out, FAKE_SLEEP_S=str(sleep))
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        parts = []
        for feed in sorted(glob.glob(os.path.join(out, "*-*", "tests.txt"))):
            with open(feed) as f:
                devices, regex = f.read().strip().split("|", 1)
            parts.append((devices, regex))
        return p, out, parts

    @staticmethod
    def classes_of(parts, classes):
        runs = {c: [] for c in classes}
        for devices, regex in parts:
            for c in classes:
                if re.fullmatch(regex, c):
                    runs[c].append(devices)
        return runs

    def test_whole_suite_and_halves_run_every_gpu_class_once(self):
        classes = gpu_test_classes()
        self.assertGreater(len(classes), 25, sorted(classes))
        p, _, whole = self.run_lanes()
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        p1, _, half1 = self.run_lanes("1")
        p2, _, half2 = self.run_lanes("2")
        self.assertEqual(0, p1.returncode + p2.returncode, p1.stdout + p2.stdout)
        for name, parts in (("whole", whole), ("halves", half1 + half2)):
            runs = self.classes_of(parts, classes)
            self.assertEqual({c: 1 for c in classes}, {c: len(d) for c, d in runs.items()}, name)
        print("ok: every GPU class runs once in the whole suite and once across the halves")

    def test_free_memory_tests_have_gpus_0_and_1_to_themselves(self):
        memory = {c for c in gpu_test_classes() if c.rsplit(".", 1)[1] in (
            "UserBufferGpuTest", "VmmUserBufferGpuTest", "ProcessModeGpuTest", "VmmGpuTest")}
        self.assertEqual(4, len(memory), memory)
        self.assertTrue(memory)
        for half in ("1", "2"):
            _, _, parts = self.run_lanes(half)
            runs = self.classes_of(parts, memory)
            lanes_here = [d for d, _ in parts]
            for c, devices in runs.items():
                for d in devices:
                    self.assertEqual("0,1", d, c)
            if any(runs.values()):
                others = [d for d in lanes_here if d != "0,1"]
                self.assertTrue(all("0" not in d.split(",") and "1" not in d.split(",") for d in others
                                    if d != "0,1,2,3"), lanes_here)
        print("ok: the free-memory tests run on GPUs 0,1 with no other lane on them")

    def test_a_timeout_keeps_the_feeds_and_bad_arguments_are_refused(self):
        p, out, _ = self.run_lanes("2", timeout=2, sleep=30)
        self.assertEqual(124, p.returncode, p.stdout + p.stderr)
        with tarfile.open(os.path.join(out, "feeds.tgz")) as t:
            names = t.getnames()
        self.assertIn("lanes.txt", names)
        self.assertTrue(any(n.endswith("/tests.txt") for n in names), names)
        p, _, parts = self.run_lanes("3")
        self.assertEqual(2, p.returncode)
        self.assertIn("give 1, 2 or lanes", p.stderr)
        self.assertEqual([], parts)
        print("ok: a timeout leaves feeds.tgz; '3' is refused")


if __name__ == "__main__":
    unittest.main(verbosity=1)
