#!/usr/bin/env bash
# Session 36 call 5 (one GPU), bundle 4982d60 (the last code before the review mend; 6300bfd adds results only): SharedGpuOpsGpuTest
# whole (two ranks, a JVM each, on one GPU: the overlap methods, FP8, the atomic RS with e36385c's launcher and
# the kernel option, and the fp32 LayerNormMLP against float64).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite5 STALL_S=120 timeout -k 10 420 bash $B/gpu-lanes.sh "0:${t}SharedGpuOpsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite5/lanes.txt 2>/dev/null
cp /tmp/suite5/lanes.txt /tmp/suite5/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite5/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
echo "done t=$((SECONDS-start))"
