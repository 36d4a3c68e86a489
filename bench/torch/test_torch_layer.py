"""Checks of torch_layer.py without a GPU or PyTorch: its options, FLOP and MFU arithmetic (against the numbers of
ubuf's StepFlopsTest), batch seeds, records and results file.

    cd bench/torch && python3 -m unittest test_torch_layer     (or: python3 bench/torch/test_torch_layer.py)
"""
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_layer  # noqa: E402

TORCHRUN_2 = {"WORLD_SIZE": "2", "LOCAL_RANK": "0", "RANK": "0"}
# The record keys the task and the demo's --out share, plus the warm-up count.
RECORD_KEYS = {"op", "method", "tp", "dtype", "m", "n", "k", "ms", "hidden", "ffn", "tokens", "layers", "activation",
               "iters", "warmup", "steps_per_sample", "host_enqueue_ms", "model_flops_per_gpu", "mfu", "mfu_peak_tflops", "p10_ms",
               "p90_ms", "torch_version"}


def parse(argv, env=TORCHRUN_2):
    return torch_layer.parse_args(argv, env)


def refused(argv, env=TORCHRUN_2):
    """The argparse error text of argv, or None when it parses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            torch_layer.parse_args(argv, env)
        except SystemExit:
            return err.getvalue()
    return None


class ImportTest(unittest.TestCase):
    def test_imports_and_parses_where_torch_cannot_be_imported(self):
        # sys.modules["torch"] = None makes every `import torch` fail, whether PyTorch is installed or not.
        code = ("import sys; sys.modules['torch'] = None; import torch_layer; "
                "a = torch_layer.parse_args([], {'WORLD_SIZE': '2', 'LOCAL_RANK': '0'}); print(a.tp, a.methods)")
        out = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "2 ['torch_nccl', 'torch_async']")

    def test_multicast_is_forced_off(self):
        env = dict(os.environ, TORCH_SYMM_MEM_DISABLE_MULTICAST="0", NCCL_NVLS_ENABLE="1")
        code = ("import os, torch_layer; print(os.environ['TORCH_SYMM_MEM_DISABLE_MULTICAST'], "
                "os.environ['NCCL_NVLS_ENABLE'], os.environ['NVSHMEM_DISABLE_NVLS'])")
        out = subprocess.run([sys.executable, "-c", code], cwd=HERE, env=env, capture_output=True, text=True)
        self.assertEqual(out.stdout.split(), ["1", "0", "1"], out.stderr)


class ArgsTest(unittest.TestCase):
    def test_defaults_are_llama3_8b_at_the_rank_count(self):
        a = parse([])
        self.assertEqual((a.hidden, a.ffn, a.tokens), (4096, 14336, 8192))
        self.assertEqual((a.activation, a.dtype, a.iters, a.warmup), ("swiglu", "bf16", 20, 3))
        self.assertEqual(a.methods, ["torch_nccl", "torch_async"])
        self.assertEqual((a.tp, a.lr, a.json, a.steps_per_sample), (2, 0.01, None, 1))
        self.assertEqual(parse(["--steps-per-sample", "4"]).steps_per_sample, 4)

    def test_options(self):
        a = parse(["--hidden", "64", "--ffn", "128", "--tokens", "32", "--activation", "gelu", "--dtype", "fp32",
                   "--iters", "5", "--warmup", "0", "--methods", "torch_async", "--seed", "7", "--lr", "0.5"],
                  dict(TORCHRUN_2, WORLD_SIZE="4"))
        self.assertEqual((a.hidden, a.ffn, a.tokens, a.activation, a.dtype), (64, 128, 32, "gelu", "fp32"))
        self.assertEqual((a.iters, a.warmup, a.methods, a.seed, a.lr, a.tp), (5, 0, ["torch_async"], 7, 0.5, 4))

    def test_methods_keep_their_order(self):
        self.assertEqual(parse(["--methods", "torch_async,torch_nccl"]).methods, ["torch_async", "torch_nccl"])

    def test_needs_torchrun_with_two_ranks(self):
        self.assertIn("torchrun", refused([], {}))
        self.assertIn("at least 2 ranks", refused([], dict(TORCHRUN_2, WORLD_SIZE="1")))

    def test_refusals(self):
        cases = [
            (["--methods", "torch_fast"], "unknown method 'torch_fast'"),
            (["--methods", "torch_nccl,torch_nccl"], "listed twice"),
            (["--methods", ","], "at least one method"),
            (["--ffn", "14337"], "--ffn: 14337 must be a positive multiple of tp = 2"),
            (["--tokens", "8191"], "--tokens: 8191 must be a positive multiple of tp = 2"),
            (["--tokens", "0"], "--tokens"),
            (["--hidden", "0"], "--hidden"),
            (["--iters", "0"], "--iters must be at least 1"),
            (["--warmup", "-1"], "--warmup must be at least 0"),
            (["--steps-per-sample", "0"], "--steps-per-sample must be 1 to 64"),
            (["--steps-per-sample", "65"], "--steps-per-sample must be 1 to 64"),
            (["--lr", "0"], "--lr"),
            (["--lr", "inf"], "--lr"),
            (["--lr", "nan"], "--lr"),
            (["--activation", "relu"], "invalid choice"),
            (["--dtype", "fp8"], "invalid choice"),
        ]
        for argv, text in cases:
            with self.subTest(argv=argv):
                msg = refused(argv)
                self.assertIsNotNone(msg, f"{argv} parsed")
                self.assertIn(text, msg)

    def test_unwritable_json_is_refused_on_rank_0_only(self):
        path = "/proc/no-such-dir/out.json"
        self.assertIn("cannot be written", refused(["--json", path]))
        self.assertIsNone(refused(["--json", path], dict(TORCHRUN_2, RANK="1")))


class FlopsTest(unittest.TestCase):
    def test_as_step_flops_counts(self):
        # StepFlopsTest.countsFc1AndFc2ForwardAndBackwardPerGpu (one layer of its two for SwiGLU)
        self.assertEqual(torch_layer.model_flops_per_gpu(4, 16, "gelu", 8, 2),
                         3 * (2.0 * 8 * 4 * 16 + 2.0 * 8 * 16 * 4) / 2)
        self.assertEqual(torch_layer.model_flops_per_gpu(4, 16, "swiglu", 8, 4, layers=2),
                         2 * 3 * (2.0 * 8 * 4 * 32 + 2.0 * 8 * 16 * 4) / 4)
        self.assertEqual(torch_layer.fc1_outputs(14336, "swiglu"), 28672)
        self.assertEqual(torch_layer.fc1_outputs(14336, "gelu"), 14336)
        with self.assertRaises(ValueError):
            torch_layer.model_flops_per_gpu(0, 1, "gelu", 1, 1)

    def test_the_task_formula(self):
        # 6 T h (fc1 outputs + ffn) / tp
        for act, fc1 in (("swiglu", 2 * 14336), ("gelu", 14336)):
            self.assertEqual(torch_layer.model_flops_per_gpu(4096, 14336, act, 8192, 2),
                             6.0 * 8192 * 4096 * (fc1 + 14336) / 2)

    def test_llama8b_step_at_tp2_as_step_flops_test(self):
        flops = torch_layer.model_flops_per_gpu(4096, 14336, "swiglu", 8192, 2)
        self.assertAlmostEqual(torch_layer.mfu(flops, 7.62, torch_layer.peak_tflops("NVIDIA H100 80GB HBM3")),
                               0.57, delta=0.01)

    def test_peaks(self):
        self.assertEqual(torch_layer.peak_tflops("NVIDIA H200"), 989.4)
        self.assertEqual(torch_layer.peak_tflops("NVIDIA H100 80GB HBM3"), 989.4)
        self.assertEqual(torch_layer.peak_tflops("NVIDIA H100 SXM5 80GB"), 989.4)
        self.assertEqual(torch_layer.peak_tflops("NVIDIA H100 PCIe"), 756.0)
        self.assertEqual(torch_layer.peak_tflops("NVIDIA A100-SXM4-80GB"), 312.0)
        self.assertIsNone(torch_layer.peak_tflops("host simulation"))


class RecordTest(unittest.TestCase):
    def setUp(self):
        self.a = parse(["--iters", "5", "--warmup", "2"])
        # [method][iteration] = (step ms, host ms); the warm-ups are slow and must not count
        self.times = [[(100.0, 50.0), (90.0, 40.0), (10.0, 1.0), (12.0, 2.0), (11.0, 1.5), (14.0, 3.0), (13.0, 2.5)],
                      [(80.0, 60.0), (70.0, 30.0), (9.0, 1.0), (8.0, 1.0), (9.5, 1.2), (8.5, 1.1), (30.0, 9.0)]]

    def test_records_of_the_timed_iterations(self):
        recs = torch_layer.build_records(self.a, ["torch_nccl", "torch_async"], self.times, "2x NVIDIA H200",
                                         "2.11.0")
        self.assertEqual([r["method"] for r in recs], ["torch_nccl", "torch_async"])
        nccl, async_ = recs
        self.assertEqual(set(nccl), RECORD_KEYS)
        self.assertEqual(nccl["ms"], 12.0)
        self.assertEqual(nccl["host_enqueue_ms"], 2.0)
        self.assertAlmostEqual(nccl["p10_ms"], 10.4)
        self.assertAlmostEqual(nccl["p90_ms"], 13.6)
        self.assertEqual(async_["ms"], 9.0)
        self.assertEqual(async_["host_enqueue_ms"], 1.1)
        self.assertEqual((nccl["op"], nccl["tp"], nccl["dtype"], nccl["layers"], nccl["activation"]),
                         ("layer", 2, "bf16", 1, "swiglu"))
        # m, n, k as the demo writes them: tokens, hidden, ffn
        self.assertEqual((nccl["m"], nccl["n"], nccl["k"]), (8192, 4096, 14336))
        self.assertEqual((nccl["tokens"], nccl["hidden"], nccl["ffn"], nccl["iters"], nccl["warmup"]),
                         (8192, 4096, 14336, 5, 2))
        flops = 6.0 * 8192 * 4096 * (2 * 14336 + 14336) / 2
        self.assertEqual(nccl["model_flops_per_gpu"], flops)
        self.assertEqual(nccl["mfu_peak_tflops"], 989.4)
        self.assertAlmostEqual(nccl["mfu"], flops / 12e-3 / 989.4e12)
        self.assertEqual(nccl["torch_version"], "2.11.0")

    def test_no_mfu_for_an_unknown_gpu(self):
        r = torch_layer.build_records(self.a, ["torch_nccl"], self.times[:1], "2x Some GPU", "2.5.1")[0]
        self.assertNotIn("mfu", r)
        self.assertNotIn("mfu_peak_tflops", r)
        self.assertIn("MFU", torch_layer.human_line(
            torch_layer.build_records(self.a, ["torch_nccl"], self.times[:1], "2x NVIDIA H200", "x")[0]))
        self.assertNotIn("MFU", torch_layer.human_line(r))

    def test_human_line(self):
        r = torch_layer.build_records(self.a, ["torch_nccl"], self.times[:1], "2x NVIDIA H200", "x")[0]
        line = torch_layer.human_line(r)
        self.assertTrue(line.startswith("torch_nccl"))
        self.assertIn("12.000 ms", line)
        self.assertIn("host enqueue   2.000 ms", line)
        self.assertIn(f"MFU {100 * r['mfu']:5.1f}%", line)

    def test_iteration_lines(self):
        losses = {"torch_nccl": [1.0 + i for i in range(7)], "torch_async": [1.0 + i for i in range(7)]}
        lines = torch_layer.iteration_lines(self.a, ["torch_nccl", "torch_async"], self.times, losses)
        self.assertEqual(len(lines), 7)
        self.assertIn("(warm-up)", lines[1])
        self.assertNotIn("(warm-up)", lines[2])
        self.assertIn("torch_nccl   10.000 ms loss 3.000000, torch_async    9.000 ms loss 3.000000", lines[2])

    def test_document(self):
        recs = torch_layer.build_records(self.a, ["torch_nccl"], self.times[:1], "2x NVIDIA H200", "x")
        doc = torch_layer.document("2x NVIDIA H200", recs, commit="abc1234", date="2026-11-26")
        self.assertEqual(list(doc), ["device", "date", "commit", "records"])
        self.assertEqual((doc["device"], doc["date"], doc["commit"]), ("2x NVIDIA H200", "2026-11-26", "abc1234"))
        self.assertEqual(json.loads(json.dumps(doc))["records"], recs)
        with_torch = torch_layer.document("d", recs, commit="c", torch_version="2.11.0", cuda="13.0")
        self.assertEqual((with_torch["torch"], with_torch["cuda"]), ("2.11.0", "13.0"))
        self.assertNotIn("failures", with_torch)
        failure = dict(op="layer", method="torch_async", m=8192, n=4096, k=14336, error="missing")
        self.assertEqual(torch_layer.document("d", recs, [failure], commit="c")["failures"], [failure])

    def test_commit_from_the_environment(self):
        saved = os.environ.get("UBUF_COMMIT")
        try:
            os.environ["UBUF_COMMIT"] = "f00ba12\n"
            self.assertEqual(torch_layer.document("d", [])["commit"], "f00ba12")
            del os.environ["UBUF_COMMIT"]
            self.assertEqual(torch_layer.document("d", [])["commit"], "unknown")
        finally:
            if saved is None:
                os.environ.pop("UBUF_COMMIT", None)
            else:
                os.environ["UBUF_COMMIT"] = saved


class LossAndSeedTest(unittest.TestCase):
    def test_batch_seeds_differ_by_rank_and_iteration(self):
        seeds = {torch_layer.batch_seed(1, it, rank) for it in range(200) for rank in range(8)}
        self.assertEqual(len(seeds), 1600)
        self.assertTrue(all(0 <= s < 1 << 63 for s in seeds))
        self.assertEqual(torch_layer.batch_seed(1, 3, 1), torch_layer.batch_seed(1, 3, 1))
        self.assertNotEqual(torch_layer.batch_seed(1, 3, 1), torch_layer.batch_seed(2, 3, 1))
        self.assertTrue(0 <= torch_layer.batch_seed(-5, 0, 0) < 1 << 63)

    def test_finite(self):
        self.assertTrue(torch_layer.all_finite([0.5, 1e30]))
        self.assertFalse(torch_layer.all_finite([0.5, math.nan]))
        self.assertFalse(torch_layer.all_finite([math.inf]))

    def test_summary(self):
        self.assertEqual(torch_layer.summary([3.0]), (3.0, 3.0, 3.0))
        med, p10, p90 = torch_layer.summary([5.0, 1.0, 4.0, 2.0, 3.0])
        self.assertEqual(med, 3.0)
        self.assertAlmostEqual(p10, 1.4)
        self.assertAlmostEqual(p90, 4.6)


# ---- the step's arithmetic on NumPy: a fake torch with just what Layer.step calls, ranks as threads ----------------

try:
    import numpy as np
except ImportError:  # the step check is skipped without NumPy
    np = None


class Arr:
    """A float64 NumPy array behind the few tensor methods Layer.step uses; slices are views, as torch's."""

    def __init__(self, a):
        self.a = a

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: "float64")

    def __getitem__(self, i):
        return Arr(self.a[i])

    def __mul__(self, o):
        return Arr(self.a * (o.a if isinstance(o, Arr) else o))

    def t(self):
        return Arr(self.a.T)

    def add_(self, o, alpha=1.0):
        self.a += alpha * o.a
        return self

    def sub_(self, o):
        self.a -= o.a
        return self

    def mul_(self, s):
        self.a *= s
        return self

    def float(self):
        return self

    def square(self):
        return Arr(self.a ** 2)

    def sum(self, dim=None, dtype=None):
        return Arr(np.asarray(self.a.sum(axis=dim)))

    def copy_(self, src):
        self.a[...] = src.a
        return self

    def clone(self):
        return Arr(self.a.copy())


class World:
    """The ranks' collectives: each rank puts its array in, all wait, each reads every rank's."""

    def __init__(self, tp):
        self.tp, self.slots, self.barrier = tp, [None] * tp, threading.Barrier(tp, timeout=20)

    def exchange(self, rank, a):
        self.slots[rank] = a.copy()
        self.barrier.wait()
        got = list(self.slots)
        self.barrier.wait()
        return got


def silu(x):
    return x / (1 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd


def fake_torch(world, rank):
    """torch as Layer.step sees it, for one rank of world (float64 throughout)."""
    tp = world.tp

    def all_gather(out, shard, group=None):
        out.a[...] = np.concatenate(world.exchange(rank, shard.a))

    def reduce_scatter(out, full, group=None):
        out.a[...] = np.split(sum(world.exchange(rank, full.a)), tp)[rank]

    def all_reduce(t, op=None, group=None):
        t.a[...] = sum(world.exchange(rank, t.a))

    def ln_forward(x, shape, w, b, eps):
        y, mean, rstd = layer_norm(x.a, w.a, b.a, eps)
        return Arr(y), Arr(mean), Arr(rstd)

    def ln_backward(dy, x, shape, mean, rstd, w, b, mask):
        xhat = (x.a - mean.a) * rstd.a
        g = dy.a * w.a
        dx = rstd.a * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
        return Arr(dx), Arr((dy.a * xhat).sum(axis=0)), Arr(dy.a.sum(axis=0))

    def silu_backward(dy, x):
        s = 1 / (1 + np.exp(-x.a))
        return Arr(dy.a * s * (1 + x.a * (1 - s)))

    def gelu_backward(dy, x, approximate):
        assert approximate == "tanh"
        c, u = math.sqrt(2 / math.pi), x.a
        th = np.tanh(c * (u + 0.044715 * u ** 3))
        return Arr(dy.a * (0.5 * (1 + th) + 0.5 * u * (1 - th ** 2) * c * (1 + 3 * 0.044715 * u ** 2)))

    def fused_ag_mm(a, bs, dim, group):
        full = Arr(np.empty((a.shape[0] * tp,) + a.shape[1:]))
        all_gather(full, a)
        return full, [Arr(full.a @ b.a) for b in bs]

    def fused_mm_rs(a, b, op, dim, group):
        assert op == "sum" and dim == 0
        out = Arr(np.empty((a.shape[0] // tp, b.shape[1])))
        reduce_scatter(out, Arr(a.a @ b.a))
        return out

    ns = types.SimpleNamespace
    functional = ns(silu=lambda x: Arr(silu(x.a)),
                    gelu=lambda x, approximate: Arr(gelu_tanh(x.a)) if approximate == "tanh" else None)
    torch = ns(
        float32="float64", empty=lambda *shape, device=None, dtype=None: Arr(np.empty(shape)),
        matmul=lambda x, y: Arr(x.a @ y.a), stack=lambda ts: Arr(np.stack([t.a for t in ts])),
        cat=lambda ts, dim: Arr(np.concatenate([t.a for t in ts], axis=dim)), nn=ns(functional=functional),
        ops=ns(aten=ns(native_layer_norm=ln_forward, native_layer_norm_backward=ln_backward,
                       silu_backward=silu_backward, gelu_backward=gelu_backward),
               symm_mem=ns(fused_all_gather_matmul=fused_ag_mm, fused_matmul_reduce_scatter=fused_mm_rs)))
    dist = ns(all_gather_into_tensor=all_gather, reduce_scatter_tensor=reduce_scatter, all_reduce=all_reduce)
    return torch, dist


def reference_loss(shared, shards, x, target, activation):
    """The MSE of the whole layer, unsharded in tokens: the sum over ranks' fc1/fc2 shards (float64)."""
    ln = layer_norm(x, shared["gamma"], shared["beta"], torch_layer.LN_EPS)[0]
    y = shared["b2"].copy()
    for s in shards:
        pre = ln @ s["w1"].T + s["b1"]
        if activation == "gelu":
            act = gelu_tanh(pre)
        else:
            half = pre.shape[1] // 2
            act = silu(pre[:, :half]) * pre[:, half:]
        y = y + act @ s["w2"].T
    return ((y - target) ** 2).mean()


@unittest.skipIf(np is None, "NumPy is not installed")
class StepArithmeticTest(unittest.TestCase):
    """Layer.step's hand-written forward and backward, ranks as threads over a fake process group, against central
    differences of the unsharded layer: every parameter's SGD update must be -lr times the true gradient."""
    H, FFN, TOKENS, TP, LR = 6, 8, 8, 2, 0.5

    def run_step(self, method, activation, shared, shards, xs, ts):
        world = World(self.TP)
        a = types.SimpleNamespace(hidden=self.H, ffn=self.FFN, tokens=self.TOKENS, activation=activation, lr=self.LR)
        after, losses, errors = [None] * self.TP, [None] * self.TP, []

        def rank_body(rank):
            try:
                layer = object.__new__(torch_layer.Layer)
                layer.torch, layer.dist = fake_torch(world, rank)
                layer.a, layer.rank, layer.tp, layer.device, layer.group, layer.group_name = a, rank, self.TP, None, \
                    None, "g"
                layer.rows, layer.ffn_local = self.TOKENS // self.TP, self.FFN // self.TP
                layer.fc1_local = torch_layer.fc1_outputs(self.FFN, activation) // self.TP
                p = torch_layer.Params(**{k: Arr(v.copy()) for k, v in dict(shared, **shards[rank]).items()})
                slot = Arr(np.zeros(1))
                layer.step(p, Arr(xs[rank].copy()), Arr(ts[rank].copy()), slot, method)
                after[rank], losses[rank] = {n: getattr(p, n).a for n in torch_layer.Params.NAMES}, slot.a[0]
            except Exception as e:  # reported by the test thread
                errors.append(e)
                world.barrier.abort()

        threads = [threading.Thread(target=rank_body, args=(r,)) for r in range(self.TP)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return after, sum(losses) / (self.TOKENS * self.H)

    def check(self, method, activation):
        rng = np.random.default_rng(7)
        fc1 = torch_layer.fc1_outputs(self.FFN, activation) // self.TP
        shared = dict(gamma=1 + 0.2 * rng.standard_normal(self.H), beta=0.1 * rng.standard_normal(self.H),
                      b2=0.1 * rng.standard_normal(self.H))
        shards = [dict(w1=rng.standard_normal((fc1, self.H)) / math.sqrt(self.H), b1=0.1 * rng.standard_normal(fc1),
                       w2=rng.standard_normal((self.H, self.FFN // self.TP)) / math.sqrt(self.FFN))
                  for _ in range(self.TP)]
        xs = [rng.uniform(-1, 1, (self.TOKENS // self.TP, self.H)) for _ in range(self.TP)]
        ts = [rng.uniform(-1, 1, (self.TOKENS // self.TP, self.H)) for _ in range(self.TP)]
        after, loss = self.run_step(method, activation, shared, shards, xs, ts)
        x, target = np.concatenate(xs), np.concatenate(ts)  # the all-gather's order: rank 0's rows first
        self.assertAlmostEqual(loss, reference_loss(shared, shards, x, target, activation), places=12)

        def numeric(values, i):
            eps, old = 1e-6, values.flat[i]
            values.flat[i] = old + eps
            up = reference_loss(shared, shards, x, target, activation)
            values.flat[i] = old - eps
            down = reference_loss(shared, shards, x, target, activation)
            values.flat[i] = old
            return (up - down) / (2 * eps)

        for name, values in shared.items():  # the same on every rank, gradients summed over all tokens
            want = np.array([numeric(values, i) for i in range(values.size)])
            for rank in range(self.TP):
                got = (values - after[rank][name]) / self.LR
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"{name} on rank {rank}")
        for rank, shard in enumerate(shards):
            for name, values in shard.items():
                want = np.array([numeric(values, i) for i in range(values.size)]).reshape(values.shape)
                got = (values - after[rank][name]) / self.LR
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"{name} on rank {rank}")

    def test_nccl_swiglu(self):
        self.check("torch_nccl", "swiglu")

    def test_nccl_gelu(self):
        self.check("torch_nccl", "gelu")

    def test_async_swiglu(self):
        self.check("torch_async", "swiglu")

    def test_async_gelu(self):
        self.check("torch_async", "gelu")


if __name__ == "__main__":
    unittest.main()
