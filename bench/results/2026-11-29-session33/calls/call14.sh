#!/usr/bin/env bash
# Session 33 call 14 (one GPU), bundle of this commit: LayerKernelsGpuTest after the review's mend (the column-
# stationary biased GELU forward through the map's BiasGeluFwd op; the same PTX).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite14 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite14/lanes.txt 2>/dev/null
cp /tmp/suite14/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite14/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
