"""PyTorch's side of `ubuf bench fp8`: bf16 and FP8 GEMMs on one GPU, timed the same way, in ubuf's results format.

    python3 bench/torch/torch_fp8_gemm.py --json OUT.json [--shapes M,K,N ...] [--iters 50] [--warmup 10]
        [--heat-ms 1000]

For each shape, D[M,N] = A[M,K] @ B[N,K]^T with A and B uniform in [-1, 1) (the layout FP8 needs on Hopper), bf16
output. Each iteration runs, in this order (as `ubuf bench fp8` does):
  torch_bf16       torch.matmul(a, b.t()) in bf16
  torch_fp8        torch._scaled_mm(a8, b8.t(), scale 1, scale 1, out_dtype=bf16, use_fast_accum=False)
  torch_fp8_fast   the same with use_fast_accum=True
timed as `ubuf bench fp8` times cuBLASLt (gemm_timing.py: one run each, --heat-ms of the three back to back, the
graphs (runs sized by the shape, as on the ubuf side) replayed, heated, warmed up and timed back to back), and writes median, p10 and p90 (ms). Run it alternately with `ubuf bench fp8` on one machine.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gemm_timing.py lies beside this script
import gemm_timing  # noqa: E402

DEFAULT_SHAPES = ["8192,8192,8192", "4096,4096,4096", "16384,4096,14336", "16384,14336,4096", "8192,8192,28672"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="OUT", help="results file to write; default: only print")
    p.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, metavar="M,K,N")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--heat-ms", type=int, default=1000)
    a = p.parse_args(argv)
    shapes = []
    for w in a.shapes:
        parts = w.split(",")
        if len(parts) != 3 or not all(x.isdigit() and int(x) > 0 for x in parts):
            p.error(f"a shape is M,K,N (three positive integers), got '{w}'")
        m, k, n = map(int, parts)
        if m % 16 or k % 16 or n % 16:
            p.error(f"shape '{w}': every dimension must be a multiple of 16 for FP8 on Hopper")
        shapes.append((m, k, n))
    if a.iters < 1 or a.warmup < 0 or a.heat_ms < 0:
        p.error("--iters must be >= 1, --warmup and --heat-ms >= 0")
    a.shapes = shapes
    return a


def main(argv):
    a = parse_args(argv)
    import torch
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    name = torch.cuda.get_device_name(dev)
    records = []
    for m, k, n in a.shapes:
        x = torch.rand(m, k, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
        w = torch.rand(n, k, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
        x8 = x.to(torch.float8_e4m3fn)
        w8 = w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        work = {
            "torch_bf16": lambda: torch.matmul(x, w.t(), out=out),
            "torch_fp8": lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                  use_fast_accum=False),
            "torch_fp8_fast": lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one,
                                                       out_dtype=torch.bfloat16, use_fast_accum=True),
        }
        runs = gemm_timing.runs_per_graph(m, n, k)
        samples = gemm_timing.time_graphs(torch, list(work.values()), a.warmup, a.iters, a.heat_ms, runs)
        times = dict(zip(work, samples))
        bf16_ms = statistics.median(times["torch_bf16"])
        line = []
        for key, t in times.items():
            ms = statistics.median(t)
            tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
            line.append(f"{key} {ms:.4f} ms {tflops:.0f} TFLOP/s")
            records.append(dict(op="gemm", method=key, tp=1, dtype="bf16" if key == "torch_bf16" else "fp8_e4m3",
                                m=m, n=n, k=k, ms=ms, p10_ms=gemm_timing.percentile(t, 0.1),
                                p90_ms=gemm_timing.percentile(t, 0.9),
                                tflops=tflops, speedup_vs_bf16=bf16_ms / ms, layout="nt", out_dtype="bf16",
                                iters=a.iters, warmup=a.warmup, heat_ms=a.heat_ms, timing="interleaved",
                                runs="graph", runs_per_graph=runs))
        print(f"gemm {m}x{n}x{k} (M,N,K): " + ", ".join(line), flush=True)
    if a.json:
        doc = dict(device=name, date=__import__("datetime").date.today().isoformat(),
                   commit=os.environ.get("UBUF_COMMIT", "unknown"), torch=torch.__version__,
                   cuda=torch.version.cuda, records=records)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote " + a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
