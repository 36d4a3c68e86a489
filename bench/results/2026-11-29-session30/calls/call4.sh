#!/usr/bin/env bash
# Session 30 call 4 (one GPU): GEMM parity with --retune (fresh choices from the benchmark's own timing: screen, then
# the finalists each in its steady state) on five shapes whose tuned choice is not cuBLASLt's first, 3 alternating
# rounds against torch.matmul; the records carry each candidate's retune and screen times.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
S="gemm:512,4096,3072 gemm:256,4096,3072 gemm:2048,5120,3584 gemm:256,2048,4096 gemm:1024,4096,14336"
mkdir -p /tmp/xdg-empty
XDG_CACHE_HOME=/tmp/xdg-empty PARITY_SHAPES="$S" ALT_BUDGET_S=200 timeout -k 10 220 \
  bash $B/run-gpu.sh "parity=3 --retune --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== rc=$?"
grep -h "^retuned" $O/run.log $O/parity/*.log 2>/dev/null | head
python3 - "$O/parity" <<'PY'
import json, glob, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
extra = {}
for f in sorted(glob.glob(sys.argv[1] + "/*gemm-r*.json")):
    for r in json.load(open(f))["records"]:
        s = (r["m"], r["k"], r["n"])
        d[s][r["method"]].append(r["ms"] * 1000)
        if "retune_ms" in r:
            extra[s] = (r.get("heuristic_rank"), [None if v is None else round(v * 1000, 2) for v in r["retune_ms"]],
                        [None if v is None else round(v * 1000, 2) for v in r.get("retune_screen_ms", [])])
for s, v in d.items():
    u, t = v.get("cublaslt", []), v.get("torch", [])
    print(s, "ubuf", [round(x, 2) for x in u], "torch", [round(x, 2) for x in t],
          "ratio %.3f" % (sorted(u)[len(u) // 2] / sorted(t)[len(t) // 2]) if u and t else "")
    print("   rank, retune us, screen us:", extra.get(s))
PY
cd $O && tar czf parity.tgz parity run.log log.txt summary.txt 2>/dev/null; rm -rf parity
