"""torch.matmul's side of scripts/gemm-parity.py: times GEMM shapes read from standard input, one process on GPU 0.

    python3 bench/torch/torch_gemm_serve.py [--dtype bf16] [--iters 50] [--warmup 10] [--heat-ms 1000]
        [--seed 20261123] [--init same|uniform] [--fp8 split|fast]

Each input line M,K,N (or gemm:M,K,N) is answered with one line 'RECORD {json}' (op gemm, method torch, the fields
torch_baseline.py writes for its gemm: words) and a line 'DONE'; a bad line with 'ERROR message'. Inputs: by default
(--init same) the very matrices `ubuf bench gemm` multiplies (ubuf_random.py: ubuf's device generator redone in
int64 tensor arithmetic; A from --seed at scale 1, B from --seed + 1 at scale 1/sqrt(K) as Java rounds it), since a
GEMM's power draw at the power limit depends on the bits it moves; --init uniform draws the same distribution with
torch.rand instead (what earlier files used). Timing is gemm_timing.py's (one run, a CUDA graph of runs sized by the
shape, heat, warm-up replays, timed replays back to back), as `ubuf bench gemm --serve` times cuBLASLt. Running
both servers side by side and alternating them shape by shape keeps both in the same power and thermal state, which
whole-process alternation cannot: an H200 at its power limit drifts by several percent over tens of seconds.

--fp8 split|fast times torch._scaled_mm instead, as `ubuf bench gemm --fp8` times cuBLASLt: A [M,K] and B [N,K]
drawn in bf16 (B in that shape), cast to float8_e4m3fn (scale 1; the values lie well inside E4M3's range), scales of
1, bf16 output, use_fast_accum False (split) or True (fast); records dtype fp8_e4m3.
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
    p.add_argument("--fp8", choices=("split", "fast"),
                   help="time torch._scaled_mm on the E4M3 casts of the operands, with this accumulation")
    a = p.parse_args(argv)
    if a.iters < 1 or a.warmup < 0 or a.heat_ms < 0:
        p.error("--iters must be >= 1, --warmup and --heat-ms >= 0")
    if a.fp8 and a.dtype != "bf16":
        p.error("--fp8 casts bf16 operands and writes bf16: --dtype must be bf16")
    return a


def parse_shape(line, fp8=False):
    word = line.strip()
    if word.startswith("gemm:"):
        word = word[5:]
    parts = word.split(",")
    if len(parts) != 3 or not all(x.isdigit() and int(x) > 0 for x in parts):
        raise ValueError(f"a shape is M,K,N (three positive integers), got '{line.strip()}'")
    shape = tuple(map(int, parts))
    if fp8 and any(d % 16 for d in shape):
        raise ValueError(f"--fp8: every dimension must be a multiple of 16 for FP8 on Hopper, got '{line.strip()}'")
    return shape


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
            m, k, n = parse_shape(line, fp8=a.fp8 is not None)
        except ValueError as e:
            print(f"ERROR {e}", flush=True)
            continue
        # B is [K,N] for torch.matmul, [N,K] for _scaled_mm (as ubuf bench gemm --fp8 draws it).
        b_rows, b_cols = (n, k) if a.fp8 else (k, n)
        if a.init == "same":
            x = ubuf_random.uniform(torch, m, k, a.seed, 1.0, dtype, dev)
            w = ubuf_random.uniform(torch, b_rows, b_cols, a.seed + 1, ubuf_random.java_inverse_sqrt(k), dtype, dev)
        else:
            x = uniform(m, k, a.seed, 1.0)
            w = uniform(b_rows, b_cols, a.seed + 1, k ** -0.5)
        runs = gemm_timing.runs_per_graph(m, n, k)
        if a.fp8:
            x8 = x.to(torch.float8_e4m3fn)
            w8 = w.to(torch.float8_e4m3fn)
            one = torch.ones((), device=dev, dtype=torch.float32)
            fast = a.fp8 == "fast"

            def work():
                torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast)
            (times,) = gemm_timing.time_graphs(torch, [work], a.warmup, a.iters, a.heat_ms, runs)
            del x8, w8, one
        else:
            c = torch.empty(m, n, device=dev, dtype=dtype)
            (times,) = gemm_timing.time_graphs(torch, [lambda: torch.matmul(x, w, out=c)], a.warmup, a.iters,
                                               a.heat_ms, runs)
            del c
        del x, w
        torch.cuda.empty_cache()
        ms = gemm_timing.percentile(times, 0.5)
        rec = dict(op="gemm", method="torch", tp=1, dtype="fp8_e4m3" if a.fp8 else a.dtype, m=m, n=n, k=k, ms=ms,
                   p10_ms=gemm_timing.percentile(times, 0.1), p90_ms=gemm_timing.percentile(times, 0.9),
                   tflops=2.0 * m * n * k / (ms * 1e-3) / 1e12, iters=a.iters, warmup=a.warmup, heat_ms=a.heat_ms,
                   timing="sequential", runs="graph", runs_per_graph=runs, seed=a.seed,
                   init="ubuf-same" if a.init == "same" else "uniform",
                   torch=torch.__version__, device=torch.cuda.get_device_name(dev))
        if a.fp8:
            rec.update(fp8_accumulation=a.fp8, layout="nt", out_dtype="bf16", quantize_scale=1.0)
        print("RECORD " + json.dumps(rec), flush=True)
        print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
