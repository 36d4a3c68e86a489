#!/usr/bin/env bash
# Session 30 call 2 (one GPU): which kernels torch.matmul (cuBLAS and cuBLASLt backends) and ubuf's cuBLASLt
# candidates run for the parity miss 512x4096x3072 (bf16, B as [K,N]), with Nsight Compute's per-kernel durations.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
NCU=/usr/local/cuda/bin/ncu
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
cat > $O/tm.py <<'PY'
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
PY
cat > $O/agg.py <<'PY'
import csv, statistics, sys, collections
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
h = rows[0]; ki = h.index("Kernel Name"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
d = collections.defaultdict(list)
for r in rows[1:]:
    if r[mi] == "gpu__time_duration.sum":
        d[r[ki]].append(float(r[vi].replace(",", "")))
for k, v in sorted(d.items(), key=lambda kv: statistics.median(kv[1])):
    print(f"{len(v):5d} median {statistics.median(v):10.0f} min {min(v):10.0f}  {k[:200]}")
PY
for shape in 512,4096,3072 1024,4096,3072; do
  for lib in cublas cublaslt; do
    timeout -k 5 90 $NCU --csv --metrics gpu__time_duration.sum python3 $O/tm.py $lib $shape > $O/ncu-torch-$lib-$shape.csv 2> $O/ncu-torch-$lib-$shape.err
    echo "== torch $lib $shape rc=$?"; python3 $O/agg.py $O/ncu-torch-$lib-$shape.csv | grep -v -i "elementwise\|fill\|distribution\|uniform" | tail -4
  done
  mkdir -p /tmp/xdg-fresh-$shape
  XDG_CACHE_HOME=/tmp/xdg-fresh-$shape timeout -k 5 150 $NCU --csv -c 3000 --metrics gpu__time_duration.sum \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench gemm --shapes $shape --iters 5 > $O/ncu-ubuf-$shape.csv 2> $O/ncu-ubuf-$shape.err
  echo "== ubuf $shape rc=$?"; python3 $O/agg.py $O/ncu-ubuf-$shape.csv | grep -i "gemm\|nvjet\|xmma\|cutlass\|sm90" | head -30
done
cd $O && tar czf ncu-csv.tgz *.csv *.err && rm -f *.csv *.err
