#!/usr/bin/env bash
# Session 22 call 3 (1 GPU): the FP8 amax folded once per block and the dense sums: their tests; fp8_quantize and
# fp8_quantize_transpose from the 8ada758 jars (one atomic per warp) and this bundle alternating, A B A B; then every
# layer kernel beside its PyTorch twin, 2 alternating rounds (the first full kernel table on an H200).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}(Fp8Quantize|ReductionKernel)GpuTest"
echo "lanes rc=$?"
mkdir -p /tmp/k
for r in 1 2; do
  for v in old new; do
    lib="$B/lib/*"; [ $v = old ] && lib="$B/old/lib/*"
    timeout -k 10 90 bash $B/java.sh -cp "$lib" dev.ubuf.cli.UbufCli bench kernels \
      --kernels fp8_quantize,fp8_quantize_transpose --iters 30 --out /tmp/k/fp8-$v-r$r.json > /tmp/k/fp8-$v-r$r.txt 2>&1
    echo "fp8 $v r$r rc=$?"; grep -E 'fp8_' /tmp/k/fp8-$v-r$r.txt
  done
done
OUT=/tmp/kt ALT_BUDGET_S=400 timeout -k 10 420 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30"
echo "kernels rc=$?"
grep -hE '% of copy' /tmp/kt/*.log 2>/dev/null | head -5
tar czf $O/suite.tgz -C /tmp suite 2>/dev/null
tar czf $O/kernels.tgz -C /tmp k kt
