#!/usr/bin/env bash
# Session 30 call 3 (one GPU): GEMM parity on three shapes, ubuf with cuBLASLt's first candidate (UB_GEMM_TUNING=0;
# at 512x4096x3072 it is the kernel torch.matmul runs, call 2) and then with the committed tuning (.gpu/xdg, which
# chose the heuristic's second there), each 3 alternating rounds against torch.matmul.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
S="gemm:512,4096,3072 gemm:1024,4096,3072 gemm:512,4096,14336 gemm:2048,4096,3072"
for mode in first tuned; do
  if [ $mode = first ]; then export UB_GEMM_TUNING=0; else unset UB_GEMM_TUNING; fi
  mkdir -p $O/$mode
  XDG_CACHE_HOME=$B/xdg PARITY_SHAPES="$S" OUT=$O/$mode ALT_BUDGET_S=150 timeout -k 10 170 \
    bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/$mode/run.log 2>&1
  echo "== $mode rc=$?"
  python3 - "$O/$mode/parity" <<'PY'
import json, glob, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*gemm-r*.json")):
    for r in json.load(open(f))["records"]:
        d[(r["m"], r["k"], r["n"])][r["method"]].append(r["ms"] * 1000)
for s, v in d.items():
    u, t = v.get("cublaslt", []), v.get("torch", [])
    print(s, "ubuf", [round(x, 2) for x in u], "torch", [round(x, 2) for x in t],
          "ratio %.3f" % (sorted(u)[len(u) // 2] / sorted(t)[len(t) // 2]) if u and t else "")
PY
done
