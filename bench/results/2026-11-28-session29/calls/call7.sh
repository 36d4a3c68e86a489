#!/usr/bin/env bash
# Session 29 call 7 (one GPU), the session's last product (the kernels of 8be1305): the single-GPU test classes
# (LayerKernels with its graph-replay case, ReductionKernel, Fp8Quantize, CublasLtGemm); then every layer kernel beside
# its PyTorch twin, 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0:${t}(LayerKernels|ReductionKernel|Fp8Quantize|CublasLtGemm)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite7/lanes.txt 2>/dev/null
cp /tmp/suite7/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite7/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
left=$((560 - (SECONDS - start)))
OUT=/tmp/kt7 ALT_BUDGET_S=$left timeout -k 10 $((left + 10)) bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > /tmp/kt7.log 2>&1
echo "kernels rc=$? t=$((SECONDS-start))"
grep -h "of copy" /tmp/kt7.log | grep -v torch | head -60 | cut -c1-110
tar czf $O/suite.tgz -C /tmp suite7 2>/dev/null
mkdir -p /tmp/kernels7 && cp /tmp/kt7/*.json /tmp/kt7/summary.txt /tmp/kt7.log /tmp/kernels7/ 2>/dev/null; tar czf $O/kernels.tgz -C /tmp kernels7
