#!/usr/bin/env python3
"""Checks scripts/sweep-calls.sh (with run-gpu.sh's alternate= stage under it) and scripts/sweep-finish.sh without a
GPU: a fake bundle whose java.sh, torchrun and nvidia-smi write small results files, so the budget, the rounds, the
devices, the multicast switches, the packing and the results folder can be checked. Run:
python3 scripts/test_sweep_calls.py (the bench module's tests run it when python3 is on the PATH)."""
import datetime
import json
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

FAKE_JAVA = r'''
import json, os, sys, time
args = sys.argv[1:]
env = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "UB_SKIPMC", "NCCL_NVLS_ENABLE", "UB_PLAN_CACHE",
                                      "XDG_CACHE_HOME", "UBUF_COMMIT")}
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"prog": "java", "args": args, "env": env}) + "\n")
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
tp = int(opt("--tp", "2"))
shapes = [("ag", 1024, 4096, 6144 // tp), ("rs", 1024, 4096 // tp, 4096)]
if "--list-shapes" in args:
    print(" ".join(f"{op}:{m},{k},{n}" for op, m, k, n in shapes))
    sys.exit(0)
warm_up = opt("--iters") == "1"
time.sleep(float(os.environ.get("FAKE_WARMUP_S" if warm_up else "FAKE_JAVA_S", "0.2")))
recs = []
for op, m, k, n in shapes:
    ring = 0.88 if op == "ag" else 0.9   # auto (0.9) 1.023x ring on the AG: a miss of the 2%
    # FAKE_IGNORE_GRAPH=1: a benchmark that times eagerly whatever it is told (the mode check must catch it).
    graph = "--cuda-graph" in args and os.environ.get("FAKE_IGNORE_GRAPH") != "1"
    base = dict(op=op, tp=tp, dtype="bf16", m=m, k=k, n=n, iters=int(opt("--iters", "20")), sweep=True,
                gemm_ms=0.8, comm_ms=0.3, cuda_graph=graph,
                timing=("cuda-graph replays, " if graph else "") + "interleaved-shuffled",
                **({"fp8": "e4m3"} if "--fp8" in args else {}))
    recs.append(dict(base, method="nccl_seq", ms=1.1))
    for method, ms, ran in (("auto", 0.9, "ring"), ("ring", ring, "ring"), ("oneshot", 0.95, "oneshot")):
        recs.append(dict(base, method=method, ms=ms, ran=ran, ideal_ms=0.8, pct_of_ideal=80 / ms,
                         vs_nccl_seq=1.1 / ms, nccl_seq_ms=1.1))
    out = opt("--out")
    with open(out, "w") as f:
        json.dump(dict(device=f"{tp}x NVIDIA H100 80GB HBM3", date=os.environ["FAKE_DATE"],
                       commit=os.environ["UBUF_COMMIT"], records=recs), f)
cache = os.environ["UB_PLAN_CACHE"]
os.makedirs(os.path.dirname(cache), exist_ok=True)
with open(cache, "a") as f:
    f.write("plan=ring\n")
'''

FAKE_TORCHRUN = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"prog": "torchrun", "args": args,
                        "env": {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
                                "UB_SKIPMC": os.environ.get("UB_SKIPMC")}}) + "\n")
nproc = int(next(a for a in args if a.startswith("--nproc-per-node=")).split("=")[1])
out = args[args.index("--json") + 1]
i = args.index("--shapes") + 1
recs = []
while i < len(args) and not args[i].startswith("--"):
    op, shape = args[i].split(":")
    m, k, n = map(int, shape.split(","))
    for method, ms in (("torch_seq", 1.2), ("torch_async", 1.3)):
        recs.append(dict(op=op, method=method, tp=nproc, dtype="bf16", m=m, k=k, n=n, ms=ms, gemm_ms=0.8,
                         comm_ms=0.3, ideal_ms=0.8, pct_of_ideal=80 / ms))
    i += 1
with open(out, "w") as f:
    json.dump(dict(device=f"{nproc}x NVIDIA H100 80GB HBM3", date=os.environ["FAKE_DATE"], commit="abc1234",
                   torch="2.11.0", cuda="13.0", records=recs, failures=[]), f)
'''

FAKE_NVIDIA_SMI = r'''#!/usr/bin/env bash
case "${1:-}" in
  dmon) trap 'exit 0' TERM; echo "# gpu pwr"; while true; do echo "    0  100"; sleep 0.1; done ;;
  -L) for i in 0 1 2 3; do echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)"; done ;;
  *) echo "nvidia-smi $*" ;;
esac
'''


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class SweepCallsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.bundle = os.path.join(d, ".gpu")
        os.makedirs(os.path.join(self.bundle, "lib"))
        for name in ("sweep-calls.sh", "run-gpu.sh", "combine-rounds.py"):
            shutil.copy(os.path.join(HERE, name), self.bundle)
        with open(os.path.join(self.bundle, "COMMIT"), "w") as f:
            f.write("abc1234\n")
        with open(os.path.join(self.bundle, "torch_baseline.py"), "w") as f:
            f.write("# fake\n")
        with open(os.path.join(self.bundle, "fake_java.py"), "w") as f:
            f.write(FAKE_JAVA)
        executable(os.path.join(self.bundle, "java.sh"),
                   '#!/usr/bin/env bash\nexec python3 "$(dirname "$0")/fake_java.py" "$@"\n')
        self.bin = os.path.join(d, "bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "fake_torchrun.py"), "w") as f:
            f.write(FAKE_TORCHRUN)
        executable(os.path.join(self.bin, "torchrun"),
                   '#!/usr/bin/env bash\nexec python3 "$(dirname "$0")/fake_torchrun.py" "$@"\n')
        executable(os.path.join(self.bin, "nvidia-smi"), FAKE_NVIDIA_SMI)
        self.log = os.path.join(d, "calls.jsonl")
        self.date = datetime.date.today().isoformat()

    def tearDown(self):
        self.dir.cleanup()

    def run_calls(self, which, out, timeout=None, extra=None, **env):
        e = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], FAKE_LOG=self.log, FAKE_DATE=self.date,
                 OUT=out, SWEEP_WORK=os.path.join(self.dir.name, "work"))
        e.pop("CUDA_VISIBLE_DEVICES", None)
        e.update({k: str(v) for k, v in env.items()})
        cmd = ["bash", os.path.join(self.bundle, "sweep-calls.sh"), which] + ([extra] if extra else [])
        if timeout:
            cmd = ["timeout", "-k", "5", str(timeout)] + cmd
        p = subprocess.run(cmd, cwd=self.dir.name, env=e, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    def repo(self, name, results_md):
        """A checkout for sweep-finish.sh: its scripts and a docs/results.md holding results_md."""
        root = os.path.join(self.dir.name, name)
        os.makedirs(os.path.join(root, "scripts"))
        os.makedirs(os.path.join(root, "docs"))
        for script in ("sweep-finish.sh", "combine-rounds.py", "results-tables.py", "sweep-slack.py",
                       "plan-vs-sweep.py"):
            shutil.copy(os.path.join(HERE, script), os.path.join(root, "scripts"))
        with open(os.path.join(root, "docs", "results.md"), "w") as f:
            f.write(results_md)
        return root

    def finish(self, packs, name, results_md="# Results\n\n## The layer demo\n\nmore\n"):
        """sweep-finish.sh on the packs into a fresh checkout (self.repo); its exit status asserted; (root, dest)."""
        root = self.repo(name, results_md)
        env = dict(os.environ, SWEEP_FINISH_ROOT=root, SWEEP_CHART="0")
        p = subprocess.run(["bash", os.path.join(root, "scripts", "sweep-finish.sh"), packs, "abc1234"], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertNotIn("failed", p.stderr)
        return root, os.path.join(root, "bench", "results", f"{self.date}-h100x4-sweep-abc1234")

    def calls(self, prog):
        with open(self.log) as f:
            return [c for c in map(json.loads, f) if c["prog"] == prog]

    def members(self, pack):
        with tarfile.open(pack) as t:
            return {m.name for m in t.getmembers() if m.isfile()}

    def test_tp4_runs_a_warm_up_then_rounds_on_four_gpus_into_one_pack(self):
        out = os.path.join(self.dir.name, "out4")
        code, text = self.run_calls("tp4", out, ALT_BUDGET_S=60, SWEEP_ROUNDS=3)
        self.assertEqual(0, code, text)
        self.assertEqual(["sweep-tp4-summary.txt", "sweep-tp4.tgz"], sorted(os.listdir(out)))
        files = self.members(os.path.join(out, "sweep-tp4.tgz"))
        for name in ("warmup.json", "warmup.txt", "sweep-r1.json", "sweep-r3.json", "torch-sweep-r3.json", "log.txt",
                     "rounds.txt", "calls.txt", "node.txt", "dmon.txt", "report.txt", "cache/plans.properties"):
            self.assertIn("sweep-tp4/" + name, files)
        self.assertNotIn("sweep-tp4/sweep-r4.json", files)
        java = [c for c in self.calls("java") if "--list-shapes" not in c["args"]]
        self.assertEqual(4, len(java))  # the warm-up and three rounds
        self.assertIn("--iters 1 --warmup 0", " ".join(java[0]["args"]))
        self.assertIn("--tp 4 --models llama3-8b,llama3-70b,qwen2.5-32b,gpt3-175b --iters 20 --warmup 3",
                      " ".join(java[1]["args"]))
        for c in self.calls("java") + self.calls("torchrun"):
            self.assertEqual("0,1,2,3", c["env"]["CUDA_VISIBLE_DEVICES"])
            self.assertEqual("1", c["env"]["UB_SKIPMC"])
        for c in java:
            self.assertTrue(c["env"]["UB_PLAN_CACHE"].startswith(os.path.join(self.dir.name, "work")))
            self.assertEqual("abc1234", c["env"]["UBUF_COMMIT"])
        torch = self.calls("torchrun")
        self.assertEqual(3, len(torch))
        self.assertIn("--nproc-per-node=4", torch[0]["args"])
        self.assertIn("--iters 10 --warmup 3", " ".join(torch[0]["args"]))
        with open(os.path.join(out, "sweep-tp4-summary.txt")) as f:
            summary = f.read()
        self.assertIn("done: 3 rounds", summary)
        self.assertIn("PASS         C4 auto faster than torch_async where it ran (2 shapes)", summary)

    def test_rounds_one_and_two_always_start_and_a_third_only_if_it_fits(self):
        out = os.path.join(self.dir.name, "out2")
        # Rounds of 8-10 s (the fake java's 8 s, plus whatever the fake torch and the machine's load add): round 2
        # starts with 11-13 s left, and after it 1-5 s are left, less than the longest round, so round 3 never starts.
        # (With a budget of 24 s, rounds of exactly 8 s left 8 s, enough for a third.)
        code, text = self.run_calls("tp2", out, ALT_BUDGET_S=21, SWEEP_MIN_LEFT_S=1, FAKE_JAVA_S=8)
        self.assertEqual(0, code, text)
        files = self.members(os.path.join(out, "sweep-tp2.tgz"))
        self.assertIn("sweep-tp2/sweep-r2.json", files)
        self.assertNotIn("sweep-tp2/sweep-r3.json", files)
        self.assertIn("stopping before round 3", text)
        self.assertIn("--nproc-per-node=2", self.calls("torchrun")[0]["args"])
        self.assertEqual("0,1", self.calls("torchrun")[0]["env"]["CUDA_VISIBLE_DEVICES"])

    def test_a_call_killed_by_its_timeout_still_leaves_a_pack(self):
        out = os.path.join(self.dir.name, "out-killed")
        code, text = self.run_calls("tp2", out, timeout=3, FAKE_WARMUP_S=60)
        self.assertEqual(124, code, text)
        files = self.members(os.path.join(out, "sweep-tp2.tgz"))
        self.assertIn("sweep-tp2/calls.txt", files)
        with open(os.path.join(out, "sweep-tp2-summary.txt")) as f:
            self.assertIn("terminated", f.read())

    def test_fp8_runs_ubuf_alone_on_the_fp8_subset_into_a_pack_of_its_own(self):
        out = os.path.join(self.dir.name, "out-fp8")
        code, text = self.run_calls("tp2", out, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, extra="fp8")
        self.assertEqual(0, code, text)
        self.assertEqual(["sweep-tp2-fp8-summary.txt", "sweep-tp2-fp8.tgz"], sorted(os.listdir(out)))
        files = self.members(os.path.join(out, "sweep-tp2-fp8.tgz"))
        for name in ("warmup.json", "sweep-r1.json", "sweep-r2.json", "rounds.txt", "report.txt"):
            self.assertIn("sweep-tp2-fp8/" + name, files)
        self.assertFalse(any("torch-sweep" in f for f in files), files)
        self.assertEqual([], self.calls("torchrun"))
        java = self.calls("java")
        self.assertEqual(3, len(java))  # the warm-up and two rounds, no --list-shapes for a baseline
        for c in java:
            self.assertIn("--fp8 --tokens 4096,8192,16384 --no-small", " ".join(c["args"]))
            self.assertEqual("0,1", c["env"]["CUDA_VISIBLE_DEVICES"])
        self.assertIn("--iters 20 --warmup 3", " ".join(java[1]["args"]))
        self.assertIn("FP8 at M 4096,8192,16384 without PyTorch", text)
        code, text = self.run_calls("tp2", out, extra="fp16")
        self.assertEqual(2, code)
        code, text = self.run_calls("tp2", out, extra="fp8", SWEEP_TOKENS="4096;8192")
        self.assertEqual(2, code)
        self.assertIn("SWEEP_TOKENS", text)

    def test_graph_mode_times_the_warm_up_and_every_round_as_replays_into_a_pack_of_its_own(self):
        out = os.path.join(self.dir.name, "out-graph")
        code, text = self.run_calls("tp4", out, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, SWEEP_GRAPH=1)
        self.assertEqual(0, code, text)
        self.assertEqual(["sweep-tp4-graph-summary.txt", "sweep-tp4-graph.tgz"], sorted(os.listdir(out)))
        java = [c for c in self.calls("java") if "--list-shapes" not in c["args"]]
        self.assertEqual(3, len(java))  # the warm-up and two rounds
        for c in java:
            self.assertIn("--cuda-graph", c["args"])
        self.assertEqual(2, len(self.calls("torchrun")))
        for c in self.calls("torchrun"):
            self.assertNotIn("--cuda-graph", c["args"])  # PyTorch stays eager

    def test_a_round_timed_in_the_other_mode_stops_the_run(self):
        out = os.path.join(self.dir.name, "out-mode")
        code, text = self.run_calls("tp2", out, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, SWEEP_GRAPH=1, FAKE_IGNORE_GRAPH=1)
        self.assertEqual(1, code, text)
        self.assertIn("round 1: its records are not all timed with cuda_graph=true: stopping", text)
        self.assertIn("sweep-tp2-graph/sweep-r1.json", self.members(os.path.join(out, "sweep-tp2-graph.tgz")))
        code, text = self.run_calls("tp2", out, SWEEP_GRAPH=2)
        self.assertEqual(2, code)
        self.assertIn("SWEEP_GRAPH is 0 or 1", text)

    def test_bad_arguments_are_refused(self):
        code, text = self.run_calls("tp3", os.path.join(self.dir.name, "o"))
        self.assertEqual(2, code)
        self.assertIn("timeout -k 10 585 bash .gpu/sweep-calls.sh tp2", text)
        code, text = self.run_calls("tp2", os.path.join(self.dir.name, "o"), SWEEP_ROUNDS=1)
        self.assertEqual(2, code)
        self.assertIn("at least 2", text)

    def test_finish_makes_the_results_folder_and_the_docs_tables(self):
        packs = os.path.join(self.dir.name, "packs")
        self.assertEqual(0, self.run_calls("tp2", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2)[0])
        self.assertEqual(0, self.run_calls("tp4", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=3)[0])
        root, dest = self.finish(packs, "repo",
                                 "# Results\n\n## Llama-3-8B sweep\n\ntext\n\n## The layer demo\n\nmore\n")
        name = os.path.basename(dest)
        for f in ("README.md", "sweep-tp2.json", "sweep-tp4.json", "tp2/sweep-r2.json", "tp4/torch-sweep-r3.json",
                  "tp4/dmon.txt", "tp4/cache/plans.properties", "tp2/combined-report.txt"):
            self.assertTrue(os.path.isfile(os.path.join(dest, f)), f)
        with open(os.path.join(dest, "sweep-tp4.json")) as f:
            doc = json.load(f)
        self.assertEqual({"ubuf": 3, "torch": 3}, doc["rounds"])
        auto = [r for r in doc["records"] if r["method"] == "auto" and r["op"] == "ag"][0]
        self.assertEqual("ring", auto["fastest"])
        self.assertAlmostEqual(0.9 / 0.88, auto["auto_over_fastest"])
        with open(os.path.join(root, "docs", "results.md")) as f:
            page = f.read()
        self.assertLess(page.index(f"--sweep bench/results/{name}/sweep-tp2.json"), page.index("## The layer demo"))
        self.assertIn("| llama3-8b qkv | ag | 1024×4096×1536 | **0.900** (ring) | 88.9 | 1.22x | 1.44x | ring |"
                      " 1.023 | **no** |", page)
        self.assertIn("auto within 2% of the fastest other method measured in the same iterations: 1 of 2 shapes", page)
        check = subprocess.run(["python3", os.path.join(root, "scripts", "results-tables.py"), "--check",
                                os.path.join(root, "docs", "results.md")], capture_output=True, text=True)
        self.assertEqual(0, check.returncode, check.stderr)
        env = dict(os.environ, SWEEP_FINISH_ROOT=root, SWEEP_CHART="0")
        finish = ["bash", os.path.join(root, "scripts", "sweep-finish.sh"), packs]
        again = subprocess.run(finish + ["abc1234"], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(1, again.returncode)
        self.assertIn("exists", again.stderr)
        other = subprocess.run(finish + ["def5678"], env=dict(env, SWEEP_FINISH_FORCE="1"), capture_output=True,
                               text=True, timeout=120)
        self.assertNotEqual(0, other.returncode)
        self.assertIn("not def5678", other.stderr)

    def test_finish_takes_an_fp8_pack_beside_the_bf16_ones(self):
        packs = os.path.join(self.dir.name, "packs8")
        self.assertEqual(0, self.run_calls("tp2", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2)[0])
        self.assertEqual(0, self.run_calls("tp2", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, extra="fp8")[0])
        root, dest = self.finish(packs, "repo8")
        for f in ("sweep-tp2.json", "sweep-tp2-fp8.json", "tp2-fp8/sweep-r2.json", "tp2-fp8/combined-report.txt"):
            self.assertTrue(os.path.isfile(os.path.join(dest, f)), f)
        with open(os.path.join(dest, "sweep-tp2-fp8.json")) as f:
            self.assertEqual(0, json.load(f)["rounds"]["torch"])
        with open(os.path.join(dest, "README.md")) as f:
            readme = f.read()
        self.assertIn("## tp 2, FP8 operands", readme)
        with open(os.path.join(root, "docs", "results.md")) as f:
            page = f.read()
        self.assertIn("Model-shape sweep, tp 2, bf16 out, FP8 operands (e4m3)", page)
        self.assertIn("Model-shape sweep, tp 2, bf16:", page)
        # The section and the README say what each pack ran: bf16 against PyTorch, the FP8 subset alone.
        intro = " ".join(page[page.index("## Model-shape sweep"):page.index("<!-- results-tables: --sweep")].split())
        self.assertIn("`bash .gpu/sweep-calls.sh tp2` (bf16, ubuf issued call by call, alternating with the PyTorch"
                      " baseline", intro)
        self.assertIn("`bash .gpu/sweep-calls.sh tp2 fp8` (the FP8 subset, E4M3 operands", intro)
        self.assertIn("ubuf alone (PyTorch's baseline has no FP8 mode)", " ".join(readme.split()))
        fp8_table = page[page.index("FP8 operands (e4m3)"):]
        self.assertIn("faster than PyTorch async-TP: 0 of 0", fp8_table, "never against the bf16 baseline")

    def test_finish_takes_a_replay_pack_beside_the_eager_one(self):
        packs = os.path.join(self.dir.name, "packsg")
        self.assertEqual(0, self.run_calls("tp4", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2)[0])
        self.assertEqual(0, self.run_calls("tp4", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, SWEEP_GRAPH=1)[0])
        root, dest = self.finish(packs, "repog")
        for f in ("sweep-tp4.json", "sweep-tp4-graph.json", "tp4-graph/sweep-r2.json", "tp4-graph/warmup.json"):
            self.assertTrue(os.path.isfile(os.path.join(dest, f)), f)
        with open(os.path.join(dest, "README.md")) as f:
            readme = f.read()
        self.assertIn("## tp 4, ubuf timed as CUDA graph replays", readme)
        self.assertIn("`SWEEP_GRAPH=1 bash .gpu/sweep-calls.sh tp4`: bf16, ubuf timed as CUDA graph replays",
                      " ".join(readme.split()))
        with open(os.path.join(root, "docs", "results.md")) as f:
            page = f.read()
        replays = page[page.index("Model-shape sweep, tp 4, bf16, ubuf timed as CUDA graph replays:"):]
        self.assertIn("faster than PyTorch async-TP: 2 of 2", replays, "PyTorch's eager rounds beside the replays")
        eager = page[page.index("Model-shape sweep, tp 4, bf16:"):]
        self.assertIn("faster than PyTorch async-TP: 2 of 2", eager)

    def test_finish_takes_an_fp8_replay_pack(self):
        packs = os.path.join(self.dir.name, "packs8g")
        code, text = self.run_calls("tp4", packs, ALT_BUDGET_S=60, SWEEP_ROUNDS=2, SWEEP_GRAPH=1, extra="fp8")
        self.assertEqual(0, code, text)
        self.assertEqual(["sweep-tp4-fp8-graph-summary.txt", "sweep-tp4-fp8-graph.tgz"], sorted(os.listdir(packs)))
        for c in [c for c in self.calls("java") if "--list-shapes" not in c["args"]]:
            self.assertIn("--cuda-graph", c["args"])
            self.assertIn("--fp8", c["args"])
        root, dest = self.finish(packs, "repo8g")
        for f in ("sweep-tp4-fp8-graph.json", "tp4-fp8-graph/sweep-r2.json", "tp4-fp8-graph/combined-report.txt"):
            self.assertTrue(os.path.isfile(os.path.join(dest, f)), f)
        with open(os.path.join(dest, "tp4-fp8-graph", "slack.txt")) as f:
            self.assertIn("== bench/results/", f.read())
        with open(os.path.join(dest, "README.md")) as f:
            self.assertIn("## tp 4, FP8 operands, ubuf timed as CUDA graph replays", f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
