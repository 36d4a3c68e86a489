"""PyTorch twin of `ubuf bench kernels`: PyTorch's own ops for the layer kernels, on the same per-rank shapes, timed the
same way, written in the same record format (method = torch_<kernel>).

    python3 bench/torch/torch_kernels.py --json OUT.json [--models 8b,70b] [--tp 2,4] [--tokens 8192] \
        [--kernels layernorm_fwd,...] [--dtype bf16] [--iters 30] [--warmup 5] [--heat-ms 300]

Shapes (tokens T, tp, hidden h, ffn f, F = f/tp), as LayerNormMLP runs them under sequence parallelism:
  layernorm_fwd/bwd   [T/tp, h]   aten native_layer_norm / native_layer_norm_backward (dx, dgamma, dbeta)
  swiglu_fwd          [T, 2F] -> [T, F]   F.silu(a) * b
  swiglu_bwd          what autograd runs for it: dy * b, dy * silu(a) (silu(a) saved), silu_backward
  gelu_fwd/bwd        [T, F]      F.gelu(approximate="tanh"), aten gelu_backward
  bias_add            [T, 2F]     y.add_(bias)
  bias_grad           [T, 2F]     dy.sum(0, dtype=float32)
  fp8_quantize        [T/tp, h]   (x * scale).to(float8_e4m3fn) (no amax: PyTorch has no fused op for it)
  fp8_quantize_transpose [T, 2F]  the same, then .t().contiguous()
  fp8_transpose       [T, h]      q.t().contiguous() of float8_e4m3fn codes (the FP8 wgrads' other layout)
Bytes are what the kernel must at least read and write (the same count as ubuf's). Each kernel and a device-to-device
copy of the same bytes (copy_ of half the bytes: it reads and writes them) are captured as CUDA graphs of back-to-back
runs and replayed round-robin (gemm_timing.py), so pct_of_copy_bw is not a ratio of two runs. To compare with ubuf,
alternate runs of this script with `ubuf bench kernels` in one session (scripts/run-gpu.sh kernels).
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gemm_timing.py lies beside this script
import gemm_timing  # noqa: E402

KERNELS = ["layernorm_fwd", "layernorm_bwd", "swiglu_fwd", "swiglu_bwd", "gelu_fwd", "gelu_bwd", "bias_add",
           "bias_grad", "fp8_quantize", "fp8_quantize_transpose", "fp8_transpose"]
MODELS = {"8b": (4096, 14336), "70b": (8192, 28672)}
DTYPES = {"bf16": 2, "fp16": 2, "fp32": 4}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="torch_kernels.py",
                                description="PyTorch's layer kernels in ubuf's results format (op kernel).")
    p.add_argument("--json", metavar="OUT", help="results file to write; default: only print")
    p.add_argument("--models", default="8b,70b", help="comma-separated: 8b, 70b (default: %(default)s)")
    p.add_argument("--tp", default="2,4", help="comma-separated tensor-parallel sizes 1..8 (default: %(default)s)")
    p.add_argument("--tokens", type=int, default=8192, help="tokens of the step (default: %(default)s)")
    p.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated (default: all)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="(default: %(default)s)")
    p.add_argument("--iters", type=int, default=30, help="timed graph replays, >= 1 (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=5, help="untimed replays, >= 0 (default: %(default)s)")
    p.add_argument("--heat-ms", type=int, default=300, help="back-to-back runs first, >= 0 (default: %(default)s)")
    a = p.parse_args(argv)
    a.models = [m for m in a.models.split(",") if m]
    for m in a.models:
        if m not in MODELS:
            p.error(f"--models: unknown model '{m}'; models: 8b, 70b")
    try:
        a.tp = [int(t) for t in a.tp.split(",") if t]
    except ValueError:
        p.error(f"--tp: comma-separated integers, got '{a.tp}'")
    a.kernels = [k for k in a.kernels.split(",") if k]
    if not a.kernels:
        p.error("--kernels: name at least one kernel; kernels: " + ", ".join(KERNELS))
    for k in a.kernels:
        if k not in KERNELS:
            p.error(f"--kernels: unknown kernel '{k}'; kernels: " + ", ".join(KERNELS))
    if len(set(a.kernels)) != len(a.kernels):
        p.error("--kernels: a kernel is listed twice: " + ",".join(a.kernels))
    if a.tokens < 1:
        p.error(f"--tokens must be at least 1, got {a.tokens}")
    for t in a.tp:
        if not 1 <= t <= 8:
            p.error(f"--tp must be 1..8, got {t}")
        if a.tokens % (16 * t):
            p.error(f"--tokens {a.tokens} must be a multiple of 16 x tp = {16 * t}")
    if a.iters < 1:
        p.error(f"--iters must be at least 1, got {a.iters}")
    if a.warmup < 0 or a.heat_ms < 0:
        p.error("--warmup and --heat-ms must be >= 0")
    return a


def cases(models, tps, tokens, kernels, e):
    """(model, tp, kernel, rows, cols, bytes), as KernelBenchCommand.cases counts them."""
    out = []
    for m in models:
        h, f = MODELS[m]
        for tp in tps:
            shard, ff = tokens // tp, f // tp
            for k in kernels:
                out.append((m, tp, k) + {
                    "layernorm_fwd": (shard, h, 2 * shard * h * e + 2 * h * e + 8 * shard),
                    "layernorm_bwd": (shard, h, 3 * shard * h * e + 8 * shard + h * e + 8 * h),
                    "swiglu_fwd": (tokens, 2 * ff, 3 * tokens * ff * e),
                    "swiglu_bwd": (tokens, 2 * ff, 5 * tokens * ff * e),
                    "gelu_fwd": (tokens, ff, 2 * tokens * ff * e),
                    "gelu_bwd": (tokens, ff, 3 * tokens * ff * e),
                    "bias_add": (tokens, 2 * ff, 2 * tokens * 2 * ff * e + 2 * ff * e),
                    "bias_grad": (tokens, 2 * ff, tokens * 2 * ff * e + 2 * ff * 4),
                    "fp8_quantize": (shard, h, shard * h * (e + 1)),
                    "fp8_quantize_transpose": (tokens, 2 * ff, tokens * 2 * ff * (e + 2)),
                    "fp8_transpose": (tokens, h, 2 * tokens * h),
                }[k])
    return out


def runs_per_graph(nbytes):
    """As KernelBenchCommand.runsPerGraph: about GRAPH_MS of work at a nominal 3 TB/s, 1..MAX_RUNS_PER_GRAPH."""
    ms = nbytes / 3e12 * 1e3
    return int(max(1, min(gemm_timing.MAX_RUNS_PER_GRAPH, math.ceil(gemm_timing.GRAPH_MS / ms))))


def work(torch, kernel, rows, cols, dt, dev):
    """The PyTorch call for one case, its operands made once."""
    import torch.nn.functional as F

    def rnd(*shape, dtype=dt):
        return torch.rand(*shape, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dtype)

    if kernel in ("layernorm_fwd", "layernorm_bwd"):
        x, w, b = rnd(rows, cols), rnd(cols), rnd(cols)
        y, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
        if kernel == "layernorm_fwd":
            return lambda: torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
        dy = rnd(rows, cols)
        return lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, w, b, [True, True, True])
    if kernel == "swiglu_fwd":
        x = rnd(rows, cols)
        a, b = x[:, :cols // 2], x[:, cols // 2:]
        return lambda: F.silu(a) * b
    if kernel == "swiglu_bwd":
        x = rnd(rows, cols)
        a, b = x[:, :cols // 2], x[:, cols // 2:]
        s = F.silu(a)  # saved by the forward
        dy = rnd(rows, cols // 2)
        return lambda: (torch.ops.aten.silu_backward(dy * b, a), dy * s)
    if kernel == "gelu_fwd":
        x = rnd(rows, cols)
        return lambda: F.gelu(x, approximate="tanh")
    if kernel == "gelu_bwd":
        x, dy = rnd(rows, cols), rnd(rows, cols)
        return lambda: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")
    if kernel == "bias_add":
        y, bias = rnd(rows, cols), rnd(cols)
        return lambda: y.add_(bias)
    if kernel == "bias_grad":
        dy = rnd(rows, cols)
        return lambda: dy.sum(0, dtype=torch.float32)
    if kernel in ("fp8_quantize", "fp8_quantize_transpose"):
        x = rnd(rows, cols)
        scale = torch.ones((), device=dev, dtype=torch.float32)
        if kernel == "fp8_quantize":
            return lambda: (x * scale).to(torch.float8_e4m3fn)

        def quantize_transpose():
            q = (x * scale).to(torch.float8_e4m3fn)
            return q, q.t().contiguous()
        return quantize_transpose
    if kernel == "fp8_transpose":
        q = rnd(rows, cols).to(torch.float8_e4m3fn)
        return lambda: q.t().contiguous()
    raise ValueError(kernel)


def main(argv):
    a = parse_args(argv)
    import torch
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    name = torch.cuda.get_device_name(dev)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    records = []
    for model, tp, kernel, rows, cols, nbytes in cases(a.models, a.tp, a.tokens, a.kernels, DTYPES[a.dtype]):
        fn = work(torch, kernel, rows, cols, dt, dev)
        half = (nbytes + 1) // 2
        src = torch.empty(half, device=dev, dtype=torch.uint8)
        dst = torch.empty(half, device=dev, dtype=torch.uint8)
        runs = runs_per_graph(nbytes)
        samples = gemm_timing.time_graphs(torch, [fn, lambda: dst.copy_(src)], a.warmup, a.iters, a.heat_ms, runs)
        ms = statistics.median(samples[0])
        copy_ms = statistics.median(samples[1])
        gbps = nbytes / (ms * 1e-3) / 1e9
        copy_gbps = nbytes / (copy_ms * 1e-3) / 1e9
        records.append(dict(op="kernel", method="torch_" + kernel, tp=tp, dtype=a.dtype, m=rows, n=cols, k=0, ms=ms,
                            model=model, bytes=nbytes, gbps=gbps, copy_ms=copy_ms, copy_gbps=copy_gbps,
                            pct_of_copy_bw=100 * gbps / copy_gbps, p10_ms=gemm_timing.percentile(samples[0], 0.1),
                            p90_ms=gemm_timing.percentile(samples[0], 0.9), iters=a.iters, warmup=a.warmup,
                            runs="graph", runs_per_graph=runs))
        print(f"{model:4} tp {tp} torch_{kernel:23} {rows:6} x {cols:<6} {ms * 1e3:8.1f} us {gbps:7.0f} GB/s  "
              f"copy {copy_gbps:7.0f} GB/s  {100 * gbps / copy_gbps:5.1f}% of copy", flush=True)
        del fn, src, dst
        torch.cuda.empty_cache()
    if a.json:
        doc = dict(device=name, date=datetime.date.today().isoformat(),
                   commit=os.environ.get("UBUF_COMMIT", "unknown"), torch=torch.__version__,
                   cuda=torch.version.cuda, records=records)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote " + a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
