# torch.matmul's kernels for a few GEMM shapes (torch.profiler), one line a shape: M K N and the CUDA kernels.
import sys, torch
from torch.profiler import profile, ProfilerActivity
for w in sys.argv[1:]:
    m, k, n = (int(v) for v in w.split(","))
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
    names = sorted({e.name for e in p.events() if e.device_type.name == "CUDA"})
    print(m, k, n, " | ".join(names), flush=True)
