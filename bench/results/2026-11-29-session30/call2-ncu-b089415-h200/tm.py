import sys, torch
M, K, N = (int(v) for v in sys.argv[2].split(","))
torch.backends.cuda.preferred_blas_library(sys.argv[1])
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.rand(M, K, device="cuda", dtype=torch.bfloat16, generator=g) - 0.5
w = torch.rand(K, N, device="cuda", dtype=torch.bfloat16, generator=g) - 0.5
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
for _ in range(20):
    torch.matmul(x, w, out=c)
torch.cuda.synchronize()
print(torch.__version__, torch.backends.cuda.preferred_blas_library())
