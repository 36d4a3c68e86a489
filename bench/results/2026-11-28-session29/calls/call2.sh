#!/usr/bin/env bash
# Session 29 call 2 (one GPU): kernels/probes/layernorm_warp_probe.cu again (the forward a warp a row, now in the probe
# only; the LayerNorm backward's partial rows stored as the product does, by shuffles 512 bytes a store, q-major; and
# clusters of 2); then GEMM parity on the sweep's per-rank GEMMs, three alternating rounds against torch.matmul, on the
# bundle's H200 tuning (.gpu/xdg, the sweeps' choices), the first parity run on an H200.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
timeout -k 5 150 $B/ln_warp > $O/ln-warp-probe2.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
grep -E "bwd|dgamma" $O/ln-warp-probe2.txt | cut -c1-130
left=$((560 - (SECONDS - start)))
CUDA_VISIBLE_DEVICES=0 OUT=/tmp/par2 ALT_BUDGET_S=$left timeout -k 10 $((left + 10)) bash $B/run-gpu.sh \
  "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
echo "parity rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
tail -30 $O/parity.log | cut -c1-200
tar czf $O/parity.tgz -C /tmp par2 2>/dev/null
