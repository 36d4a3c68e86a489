"""torch.matmul's side of scripts/gemm-parity.py: times GEMM shapes read from standard input, one process on GPU 0.

    python3 bench/torch/torch_gemm_serve.py [--dtype bf16] [--iters 50] [--warmup 10] [--heat-ms 1000]
        [--seed 20261123] [--init same|uniform]

Each input line M,K,N (or gemm:M,K,N) is answered with one line 'RECORD {json}' (op gemm, method torch, the fields
torch_baseline.py writes for its gemm: words) and a line 'DONE'; a bad line with 'ERROR message'. Inputs: by default
(--init same) the very matrices `ubuf bench gemm` multiplies (ubuf_random.py: ubuf's device generator redone in
int64 tensor arithmetic; A from --seed at scale 1, B from --seed + 1 at scale 1/sqrt(K) as Java rounds it), since a
GEMM's power draw at the power limit depends on the bits it moves; --init uniform draws the same distribution with
torch.rand instead (what earlier files used). Timing is gemm_timing.py's (one run, a CUDA graph of runs sized by the
shape, heat, warm-up replays, timed replays back to back), as `ubuf bench gemm --serve` times cuBLASLt. Running
both servers side by side and alternating them shape by shape keeps both in the same power and thermal state, which
whole-process alternation cannot: an H200 at its power limit drifts by several percent over tens of seconds.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gemm_timing.py lies beside this script
import gemm_timing  # noqa: E402
import ubuf_random  # noqa: E402

DTYPES = ("bf16", "fp16", "fp32")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--heat-ms", type=int, default=1000)
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--init", choices=("same", "uniform"), default="same",
                   help="same: ubuf bench gemm's very operands; uniform: torch.rand of the same distribution")
    a = p.parse_args(argv)
    if a.iters < 1 or a.warmup < 0 or a.heat_ms < 0:
        p.error("--iters must be >= 1, --warmup and --heat-ms >= 0")
    return a


def parse_shape(line):
    word = line.strip()
    if word.startswith("gemm:"):
        word = word[5:]
    parts = word.split(",")
    if len(parts) != 3 or not all(x.isdigit() and int(x) > 0 for x in parts):
        raise ValueError(f"a shape is M,K,N (three positive integers), got '{line.strip()}'")
    return tuple(map(int, parts))


def main(argv):
    a = parse_args(argv)
    import torch
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)

    def uniform(rows, cols, seed, scale):
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        u = torch.rand(rows, cols, device=dev, dtype=torch.float32, generator=g)
        return u.mul_(2).sub_(1).mul_(scale).to(dtype)

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            m, k, n = parse_shape(line)
        except ValueError as e:
            print(f"ERROR {e}", flush=True)
            continue
        if a.init == "same":
            x = ubuf_random.uniform(torch, m, k, a.seed, 1.0, dtype, dev)
            w = ubuf_random.uniform(torch, k, n, a.seed + 1, ubuf_random.java_inverse_sqrt(k), dtype, dev)
        else:
            x = uniform(m, k, a.seed, 1.0)
            w = uniform(k, n, a.seed + 1, k ** -0.5)
        c = torch.empty(m, n, device=dev, dtype=dtype)
        runs = gemm_timing.runs_per_graph(m, n, k)
        (times,) = gemm_timing.time_graphs(torch, [lambda: torch.matmul(x, w, out=c)], a.warmup, a.iters, a.heat_ms,
                                           runs)
        del x, w, c
        torch.cuda.empty_cache()
        ms = gemm_timing.percentile(times, 0.5)
        rec = dict(op="gemm", method="torch", tp=1, dtype=a.dtype, m=m, n=n, k=k, ms=ms,
                   p10_ms=gemm_timing.percentile(times, 0.1), p90_ms=gemm_timing.percentile(times, 0.9),
                   tflops=2.0 * m * n * k / (ms * 1e-3) / 1e12, iters=a.iters, warmup=a.warmup, heat_ms=a.heat_ms,
                   timing="sequential", runs="graph", runs_per_graph=runs, seed=a.seed,
                   init="ubuf-same" if a.init == "same" else "uniform",
                   torch=torch.__version__, device=torch.cuda.get_device_name(dev))
        print("RECORD " + json.dumps(rec), flush=True)
        print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
