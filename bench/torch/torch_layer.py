"""PyTorch twin of `ubuf demo`: one tensor-parallel LayerNormMLP training step under sequence parallelism, written by
hand with explicit collectives, timed the way the demo times its steps, written in the demo's record format (op
"layer", one record per method).

    torchrun --nproc-per-node=TP bench/torch/torch_layer.py --json OUT.json [--hidden 4096] [--ffn 14336] \
        [--tokens 8192] [--activation swiglu|gelu] [--dtype bf16|fp16|fp32] [--iters 20] [--warmup 3] \
        [--methods torch_nccl,torch_async] [--lr 0.01] [--seed 1]

The layer (tp = the number of ranks, T tokens, h hidden, f ffn, F1 = 2 f/tp for SwiGLU, f/tp for GELU), per rank:
  x [T/tp, h] -> LayerNorm (gamma, beta, eps 1e-5) -> all-gather along tokens -> [T, h]
  fc1 (column-parallel): W1 [F1, h], b1 [F1]; activation: SwiGLU silu(a) * b of fc1's two halves, or GELU tanh
  fc2 (row-parallel): W2 [h, f/tp]; its [T, h] partial sums reduce-scattered to [T/tp, h]; b2 [h] added after that
  loss: the MSE against a target [T/tp, h] over the whole TP group; backward; SGD (--lr) of every parameter.
Backward by hand: fc2's dgrad and wgrad use the all-gathered output gradient (AG of dy, whose column sums are b2's
gradient); fc1's input gradient is reduce-scattered; fc1's wgrad uses the all-gathered LayerNorm output kept from
the forward (Megatron without recomputation); gamma's and beta's gradients (fp32) are all-reduced over the group
(sequence-parallel parameters, as Megatron's finalize step does). Weight gradients stay in the parameters' dtype,
bias and LayerNorm gradients are fp32. Nothing is overlapped in the backward (Megatron would overlap fc1's
reduce-scatter with its wgrad): both methods run the same backward, so they differ in the forward only.
Methods (--methods, each on its own copy of the same initial parameters):
  torch_nccl   all_gather_into_tensor / reduce_scatter_tensor (NCCL) then torch.matmul: no overlap, what Megatron
               does without tp_comm_overlap
  torch_async  PyTorch async-TP in the forward: torch.ops.symm_mem.fused_all_gather_matmul for LayerNorm's
               all-gather with fc1, fused_matmul_reduce_scatter for fc2 with its reduce-scatter
Before timing, each method runs one untimed step on a throwaway copy of the parameters; one that fails on any rank
(async-TP missing from this PyTorch, say) is skipped with one line and listed under "failures", and the others go on.

Timing, as the demo's: every iteration draws a fresh batch (x and target uniform in [-1, 1), seeded by --seed, the
iteration and the rank; the same for every method) and runs one step of each method in turn; before each step every
rank waits at a barrier and for its GPU, then a CUDA event pair brackets the whole step (forward, loss, backward,
SGD; the loss stays on the GPU) and the host's enqueue time is taken around the call. A step's time is the maximum
over the ranks; a record holds the median (and p10, p90) over the --iters timed iterations after --warmup untimed
ones. The losses are read back after the loop: rank 0 prints them per iteration, and any that is not finite makes
the exit status 1. MFU as the demo's (StepFlops): 6 T h (F1 tp + f) / tp model FLOPs per GPU over the GPU's dense
bf16 peak. To compare with ubuf, alternate runs of this script with `ubuf demo` in one session (scripts/run-gpu.sh
layer=ROUNDS).
"""
import os

# NVLink multicast can take a shared host's GPUs out of service. Forced (never defaulted) before torch.distributed
# is imported, so that no library below can turn it on (as torch_baseline.py does).
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gemm_timing.py lies beside this script
import gemm_timing  # noqa: E402

METHODS = ("torch_nccl", "torch_async")
ACTIVATIONS = ("swiglu", "gelu")
DTYPES = ("bf16", "fp16", "fp32")
LN_EPS = 1e-5  # as ubuf's SequenceParallelLayerNorm.EPS


def parse_args(argv, env=None):
    """The options, checked against the torchrun world in env (default os.environ): WORLD_SIZE is the TP size."""
    env = os.environ if env is None else env
    p = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node=TP torch_layer.py",
        description="PyTorch's sequence-parallel LayerNormMLP training step (NCCL, async-TP) in ubuf demo's results "
                    "format (op layer).")
    p.add_argument("--json", metavar="OUT", help="results file to write (rank 0); default: only print")
    p.add_argument("--hidden", type=int, default=4096, help="hidden size (default: %(default)s)")
    p.add_argument("--ffn", type=int, default=14336, help="MLP units, divisible by tp (default: %(default)s)")
    p.add_argument("--tokens", type=int, default=8192,
                   help="tokens per step, divisible by tp (default: %(default)s)")
    p.add_argument("--activation", choices=ACTIVATIONS, default="swiglu", help="(default: %(default)s)")
    p.add_argument("--dtype", choices=DTYPES, default="bf16",
                   help="parameters and activations (default: %(default)s)")
    p.add_argument("--iters", type=int, default=20, help="timed iterations, >= 1 (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=3, help="untimed iterations first, >= 0 (default: %(default)s)")
    p.add_argument("--methods", default=",".join(METHODS),
                   help="comma-separated, run in this order each iteration: " + ", ".join(METHODS)
                        + " (default: %(default)s)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate, finite and > 0 (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seed of the weights and the batches (default: %(default)s)")
    p.add_argument("--steps-per-sample", type=int, default=1, metavar="K",
                   help="steps of a method run back to back after the barrier and timed together, the time over K,"
                        " as ubuf demo --steps-per-sample: the ranks' skew leaving the barrier then counts once per K"
                        " steps; 1 to 64 (default: %(default)s)")
    a = p.parse_args(argv)
    world = int(env.get("WORLD_SIZE", "0") or 0)
    if world < 1 or "LOCAL_RANK" not in env:
        p.error("start it with torchrun --nproc-per-node=TP (2 or more): WORLD_SIZE and LOCAL_RANK are not set")
    if world < 2:
        p.error(f"tensor parallelism needs at least 2 ranks, got WORLD_SIZE={world} (torchrun --nproc-per-node=2)")
    a.tp = world
    a.methods = [m for m in a.methods.split(",") if m]
    if not a.methods:
        p.error("--methods: name at least one method; methods: " + ", ".join(METHODS))
    for m in a.methods:
        if m not in METHODS:
            p.error(f"--methods: unknown method '{m}'; methods: " + ", ".join(METHODS))
    if len(set(a.methods)) != len(a.methods):
        p.error("--methods: a method is listed twice: " + ",".join(a.methods))
    if a.hidden < 1:
        p.error(f"--hidden must be at least 1, got {a.hidden}")
    if a.ffn < 1 or a.ffn % world:
        p.error(f"--ffn: {a.ffn} must be a positive multiple of tp = {world}")
    if a.tokens < 1 or a.tokens % world:
        p.error(f"--tokens: {a.tokens} must be a positive multiple of tp = {world}")
    if a.iters < 1:
        p.error(f"--iters must be at least 1, got {a.iters}")
    if a.warmup < 0:
        p.error(f"--warmup must be at least 0, got {a.warmup}")
    if not 1 <= a.steps_per_sample <= 64:
        p.error(f"--steps-per-sample must be 1 to 64, got {a.steps_per_sample}")
    if not (a.lr > 0) or math.isinf(a.lr):
        p.error(f"--lr: {a.lr} must be finite and > 0")
    if a.json and int(env.get("RANK", "0")) == 0:
        check_writable(p, a.json)
    return a


def check_writable(p, path):
    """Fail now, not after the whole run, when the results file cannot be written."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        existed = os.path.exists(path)
        with open(path, "a"):
            pass
        if not existed:
            os.remove(path)
    except OSError as e:
        p.error(f"--json {path} cannot be written: {e}")


def fc1_outputs(ffn, activation):
    """fc1's output columns over all ranks: the gate and up halves for SwiGLU (Activation.fc1Outputs)."""
    return 2 * ffn if activation == "swiglu" else ffn


def model_flops_per_gpu(hidden, ffn, activation, tokens, tp, layers=1):
    """StepFlops.perGpu: the multiply-adds (2 FLOPs each) of fc1 and fc2, forward and backward (3x the forward)."""
    if min(hidden, ffn, tokens, tp, layers) <= 0:
        raise ValueError("sizes must be positive")
    forward = 2.0 * tokens * hidden * fc1_outputs(ffn, activation) + 2.0 * tokens * ffn * hidden
    return 3.0 * forward * layers / tp


def peak_tflops(device):
    """StepFlops.peakTflops: the dense bf16 tensor TFLOP/s of the GPU CUDA names device, or None when unknown."""
    d = device.upper()
    if "H200" in d or ("H100" in d and ("HBM3" in d or "SXM" in d)):
        return 989.4
    if "H100" in d and "PCIE" in d:
        return 756.0
    if "A100" in d:
        return 312.0
    return None


def mfu(flops_per_gpu, ms, peak):
    """StepFlops.mfu: the share of the peak that flops_per_gpu in ms reach."""
    return flops_per_gpu / (ms * 1e-3) / (peak * 1e12)


def summary(times):
    """Median, p10 and p90 of a list of milliseconds (linear between ranks, as gemm_timing.percentile)."""
    return statistics.median(times), gemm_timing.percentile(times, 0.1), gemm_timing.percentile(times, 0.9)


def batch_seed(seed, iteration, rank):
    """The seed of a rank's batch in one iteration (as the demo's shardSeed(seed * 7919 + it, rank)): distinct per rank
    and iteration, the same for every method; a non-negative 63-bit value, as torch.Generator takes."""
    return ((seed * 7919 + iteration) * 1_000_003 + rank * 7_777_777 + 12345) & ((1 << 63) - 1)


def record(a, method, step_ms, host_ms, device, torch_version):
    """The results record of one method from its timed iterations' step and host times (max over ranks, ms)."""
    ms, p10, p90 = summary(step_ms)
    flops = model_flops_per_gpu(a.hidden, a.ffn, a.activation, a.tokens, a.tp)
    r = dict(op="layer", method=method, tp=a.tp, dtype=a.dtype, m=a.tokens, n=a.hidden, k=a.ffn, ms=ms,
             hidden=a.hidden, ffn=a.ffn, tokens=a.tokens, layers=1, activation=a.activation, iters=a.iters,
             warmup=a.warmup, steps_per_sample=a.steps_per_sample, host_enqueue_ms=statistics.median(host_ms),
             model_flops_per_gpu=flops)
    peak = peak_tflops(device)
    if peak is not None:  # as the demo: no MFU for a GPU whose peak is unknown
        r["mfu"] = mfu(flops, ms, peak)
        r["mfu_peak_tflops"] = peak
    r.update(p10_ms=p10, p90_ms=p90, torch_version=torch_version)
    return r


def document(device, records, failures=(), commit=None, date=None, torch_version=None, cuda=None):
    """The results file: {"device", "date", "commit", "records"}, plus "torch" and "cuda" when given (how
    scripts/combine-rounds.py tells a PyTorch file from ubuf's, as torch_kernels.py writes them) and "failures" when
    a method was skipped."""
    doc = dict(device=device, date=date or datetime.date.today().isoformat(),
               commit=commit if commit is not None else (os.environ.get("UBUF_COMMIT") or "unknown").strip(),
               records=list(records))
    if torch_version is not None:
        doc["torch"] = torch_version
        doc["cuda"] = cuda
    if failures:
        doc["failures"] = list(failures)
    return doc


def human_line(r):
    """One line per method: step time, host enqueue time, MFU."""
    line = (f"{r['method']:12} step {r['ms']:9.3f} ms (p10 {r['p10_ms']:.3f}, p90 {r['p90_ms']:.3f})  "
            f"host enqueue {r['host_enqueue_ms']:7.3f} ms")
    if "mfu" in r:
        line += f"  MFU {100 * r['mfu']:5.1f}% of {r['mfu_peak_tflops']:.1f} TFLOP/s"
    return line


def build_records(a, methods, times, device, torch_version):
    """One record per method from times[method][iteration] = (step ms, host ms), maxima over ranks, the warm-up
    iterations first (they are left out)."""
    out = []
    for i, m in enumerate(methods):
        timed = times[i][a.warmup:]
        out.append(record(a, m, [t[0] for t in timed], [t[1] for t in timed], device, torch_version))
    return out


def iteration_lines(a, methods, times, losses):
    """A line per iteration: each method's step time (max over ranks) and loss."""
    lines = []
    for it in range(a.warmup + a.iters):
        parts = [f"{m} {times[i][it][0]:8.3f} ms loss {losses[m][it]:.6f}" for i, m in enumerate(methods)]
        lines.append(f"iteration {it:3d}{' (warm-up)' if it < a.warmup else '          '}: " + ", ".join(parts))
    return lines


def all_finite(values):
    return all(math.isfinite(v) for v in values)


class Params:
    """One method's copy of this rank's parameters: gamma, beta [h] and b2 [h] (the same on every rank), W1 [F1, h],
    b1 [F1], W2 [h, f/tp] (this rank's shards)."""
    NAMES = ("gamma", "beta", "w1", "b1", "w2", "b2")

    def __init__(self, **tensors):
        for n in self.NAMES:
            setattr(self, n, tensors[n])

    def clone(self):
        return Params(**{n: getattr(self, n).clone() for n in self.NAMES})


class Layer:
    """The process group, the device, and one sequence-parallel LayerNormMLP training step by hand."""

    def __init__(self, a):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.a = torch, dist, a
        self.local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(self.local_rank)
        self.device = torch.device("cuda", self.local_rank)
        dist.init_process_group("nccl", device_id=self.device,
                                timeout=datetime.timedelta(seconds=float(os.environ.get("UB_TIMEOUT", "300"))))
        self.rank, self.tp = dist.get_rank(), dist.get_world_size()
        self.group = dist.group.WORLD
        self.group_name = self.group.group_name
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
        self.rows = a.tokens // self.tp
        self.ffn_local = a.ffn // self.tp
        self.fc1_local = fc1_outputs(a.ffn, a.activation) // self.tp
        self.gpu_name = torch.cuda.get_device_name(self.device)

    # ---- set-up -------------------------------------------------------------------------------------------------

    def uniform(self, *shape, seed, scale=1.0):
        """Uniform in [-1, 1) times scale, drawn in fp32 and rounded once to the dtype (as ubuf's fillRandom)."""
        torch = self.torch
        g = torch.Generator(device=self.device).manual_seed(seed & ((1 << 63) - 1))
        u = torch.rand(*shape, device=self.device, dtype=torch.float32, generator=g)
        return u.mul_(2).sub_(1).mul_(scale).to(self.dtype)

    def init_params(self):
        """The initial parameters, as ubuf's layers make them: weights uniform / sqrt(fan-in), biases uniform x 0.1,
        gamma 1, beta 0; fc1's shards seeded by rank, fc2's bias the same on every rank."""
        torch, a, h = self.torch, self.a, self.a.hidden
        s = a.seed * 1_000_003
        return Params(
            gamma=torch.ones(h, device=self.device, dtype=self.dtype),
            beta=torch.zeros(h, device=self.device, dtype=self.dtype),
            w1=self.uniform(self.fc1_local, h, seed=s + 101 + self.rank, scale=h ** -0.5),
            b1=self.uniform(self.fc1_local, seed=s + 211 + self.rank, scale=0.1),
            w2=self.uniform(h, self.ffn_local, seed=s + 307 + self.rank, scale=a.ffn ** -0.5),
            b2=self.uniform(h, seed=s + 401, scale=0.1))

    def batch(self, iteration):
        """This rank's x and target of one iteration."""
        seed = batch_seed(self.a.seed, iteration, self.rank)
        return (self.uniform(self.rows, self.a.hidden, seed=seed),
                self.uniform(self.rows, self.a.hidden, seed=seed ^ 0x5DEECE66D))

    def barrier(self):
        self.dist.barrier(device_ids=[self.local_rank])
        self.torch.cuda.synchronize()

    # ---- the step -----------------------------------------------------------------------------------------------

    def all_gather(self, shard):
        out = self.torch.empty(shard.shape[0] * self.tp, *shard.shape[1:], device=self.device, dtype=shard.dtype)
        self.dist.all_gather_into_tensor(out, shard, group=self.group)
        return out

    def reduce_scatter(self, full):
        out = self.torch.empty(full.shape[0] // self.tp, *full.shape[1:], device=self.device, dtype=full.dtype)
        self.dist.reduce_scatter_tensor(out, full, group=self.group)
        return out

    def activation(self, pre):
        """SwiGLU silu(a) * b of fc1's two halves [T, f/tp] each, or GELU tanh."""
        F = self.torch.nn.functional
        if self.a.activation == "gelu":
            return F.gelu(pre, approximate="tanh")
        half = self.ffn_local
        return F.silu(pre[:, :half]) * pre[:, half:]

    def activation_backward(self, dact, pre):
        """The gradient of fc1's output [T, F1] from the activation's output gradient [T, f/tp]."""
        torch = self.torch
        if self.a.activation == "gelu":
            return torch.ops.aten.gelu_backward(dact, pre, approximate="tanh")
        half = self.ffn_local
        gate, up = pre[:, :half], pre[:, half:]
        dgate = torch.ops.aten.silu_backward(dact * up, gate)
        dup = dact * torch.nn.functional.silu(gate)
        return torch.cat([dgate, dup], dim=1)

    def step(self, p, x, target, loss_slot, method):
        """One training step of the method on parameters p (updated in place), the sum of squared errors of this
        rank's rows into loss_slot (a one-element fp32 tensor on the GPU; nothing is read back)."""
        torch, a = self.torch, self.a
        h, tokens = a.hidden, a.tokens
        # forward: LayerNorm on this rank's rows, all-gather, fc1 (column-parallel), activation, fc2 (row-parallel),
        # reduce-scatter, fc2's bias once after it
        ln, mean, rstd = torch.ops.aten.native_layer_norm(x, [h], p.gamma, p.beta, LN_EPS)
        if method == "torch_async":
            ln_full, outs = torch.ops.symm_mem.fused_all_gather_matmul(ln, [p.w1.t()], 0, self.group_name)
            pre = outs[0]
        else:
            ln_full = self.all_gather(ln)
            pre = torch.matmul(ln_full, p.w1.t())
        pre.add_(p.b1)
        act = self.activation(pre)
        if method == "torch_async":
            y = torch.ops.symm_mem.fused_matmul_reduce_scatter(act, p.w2.t(), "sum", 0, self.group_name)
        else:
            y = self.reduce_scatter(torch.matmul(act, p.w2.t()))
        y.add_(p.b2)
        # loss: the MSE over the TP group's whole output; dy = 2 (y - t) / numel (ubuf's Trainer)
        diff = y.sub_(target)
        loss_slot.copy_(diff.float().square().sum())
        dy = diff.mul_(2.0 / (tokens * h))
        # backward of fc2: the output gradient all-gathered; its column sums are b2's gradient (all tokens)
        dy_full = self.all_gather(dy)
        db2 = dy_full.sum(0, dtype=torch.float32)
        dact = torch.matmul(dy_full, p.w2)
        dw2 = torch.matmul(dy_full.t(), act)
        # backward of the activation and fc1: dgrad reduce-scattered, wgrad on the kept all-gathered LayerNorm output
        dpre = self.activation_backward(dact, pre)
        db1 = dpre.sum(0, dtype=torch.float32)
        dln = self.reduce_scatter(torch.matmul(dpre, p.w1))
        dw1 = torch.matmul(dpre.t(), ln_full)
        # LayerNorm: gamma's and beta's gradients summed over the group's tokens (one fp32 all-reduce of both)
        _, dgamma, dbeta = torch.ops.aten.native_layer_norm_backward(dln, x, [h], mean, rstd, p.gamma, p.beta,
                                                                      [True, True, True])
        ln_grads = torch.stack([dgamma, dbeta]).float()
        self.dist.all_reduce(ln_grads, group=self.group)
        # SGD
        for param, grad in ((p.gamma, ln_grads[0]), (p.beta, ln_grads[1]), (p.w1, dw1), (p.b1, db1), (p.w2, dw2),
                            (p.b2, db2)):
            param.add_(grad, alpha=-a.lr)

    # ---- probing and timing -------------------------------------------------------------------------------------

    def enable_symmetric_memory(self):
        """Async-TP needs its ops registered and symmetric memory for the group (newer PyTorch warns that enabling
        it is no longer needed). Returns why it cannot be used, or None."""
        import warnings
        try:
            import torch.distributed._symmetric_memory as symm_mem
            ops = self.torch.ops.symm_mem
            for op in ("fused_all_gather_matmul", "fused_matmul_reduce_scatter"):
                if not hasattr(ops, op):
                    return f"torch.ops.symm_mem.{op} is missing from PyTorch {self.torch.__version__}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                symm_mem.enable_symm_mem_for_group(self.group_name)
            return None
        except Exception as e:
            return f"symmetric memory unavailable: {type(e).__name__}: {e}"

    def probe(self, method, params):
        """One untimed step of the method on a copy of params; its error (the same verdict on every rank), or None."""
        torch = self.torch
        error = self.enable_symmetric_memory() if method == "torch_async" else None
        if error is None:
            try:
                x, target = self.batch(0)
                self.step(params.clone(), x, target, torch.zeros(1, device=self.device, dtype=torch.float32), method)
                torch.cuda.synchronize()
            except Exception as e:
                error = f"{type(e).__name__}: {e}".strip()[:500]
        flag = torch.tensor([0 if error is None else 1], device=self.device)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MAX)
        if flag.item() and error is None:
            error = "failed on another rank"
        return error

    def run(self, methods, initial):
        """Times the methods, each on its own copy of initial: ([method][iteration] (step ms, host ms), max over
        ranks, as lists) and {method: losses per iteration (the group's MSE)}."""
        torch, a = self.torch, self.a
        total = a.warmup + a.iters
        params = {m: initial.clone() for m in methods}
        losses = {m: torch.zeros(total, device=self.device, dtype=torch.float32) for m in methods}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        mine = [[(0.0, 0.0)] * total for _ in methods]
        for it in range(total):
            x, target = self.batch(it)
            for i, m in enumerate(methods):
                self.barrier()
                start.record()
                t0 = time.perf_counter()
                for _ in range(a.steps_per_sample):
                    self.step(params[m], x, target, losses[m][it:it + 1], m)
                host_ms = (time.perf_counter() - t0) * 1e3 / a.steps_per_sample
                end.record()
                end.synchronize()
                mine[i][it] = (start.elapsed_time(end) / a.steps_per_sample, host_ms)
            if self.rank == 0 and (it + 1) % 10 == 0:
                print(f"  iteration {it + 1} of {total}", flush=True)
        times = torch.tensor(mine, device=self.device, dtype=torch.float64)
        self.dist.all_reduce(times, op=self.dist.ReduceOp.MAX)
        out = {}
        for m in methods:
            self.dist.all_reduce(losses[m])  # the sums of squared errors of every rank's rows
            out[m] = [v / (a.tokens * a.hidden) for v in losses[m].tolist()]
        return times.tolist(), out

    def close(self):
        self.dist.barrier(device_ids=[self.local_rank])
        self.dist.destroy_process_group()


def main(argv):
    a = parse_args(argv)
    layer = Layer(a)
    torch = layer.torch
    rank0 = layer.rank == 0
    device = f"{layer.tp}x {layer.gpu_name}"
    if rank0:
        print(f"torch_layer: LayerNormMLP (hidden {a.hidden}, ffn {a.ffn}, {a.activation}), {a.tokens} tokens per "
              f"step, tp {layer.tp}, {a.dtype}, lr {a.lr}, {a.warmup} warm-up + {a.iters} timed iterations; "
              f"methods {', '.join(a.methods)}; PyTorch {torch.__version__} on {device}", flush=True)
    initial = layer.init_params()
    methods, failures = [], []
    for m in a.methods:
        error = layer.probe(m, initial)
        if error:
            failures.append(dict(op="layer", method=m, m=a.tokens, n=a.hidden, k=a.ffn, error=error))
            if rank0:
                print(f"skipped {m}: {error}", flush=True)
        else:
            methods.append(m)
    if not methods:
        if rank0:
            print("torch_layer: no method ran", flush=True)
        layer.close()
        return 1
    times, losses = layer.run(methods, initial)
    finite = all(all_finite(losses[m]) for m in methods)
    if rank0:
        print("\n".join(iteration_lines(a, methods, times, losses)))
        records = build_records(a, methods, times, device, torch.__version__)
        for r in records:
            print(human_line(r))
        print(f"model FLOPs per GPU {records[0]['model_flops_per_gpu']:.3g}; losses "
              f"{'all finite' if finite else 'NOT ALL FINITE'}", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(document(device, records, failures, torch_version=torch.__version__,
                                   cuda=torch.version.cuda), f, indent=1)
            print(f"wrote {len(records)} records to {a.json}", flush=True)
    layer.close()
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
