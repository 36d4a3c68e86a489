#!/usr/bin/env bash
# Session 26 call 5 (4 GPUs): 771bc2b, the final reduce-scatter credits (scatter and the 2-rank ring ahead of the
# first GEMM, the ring at tp > 2 on its comm stream, pipeline at the end again): OverlapOps + RingFusedTail then
# TpLayers (GPUs 0,1) beside GraphCapture + Fp8Overlap (GPUs 2,3), then FourRankOps (all four).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite5 STALL_S=90 timeout -k 10 420 bash $B/gpu-lanes.sh \
  "0,1:${t}(OverlapOps|RingFusedTail)GpuTest;${t}TpLayersGpuTest" "2,3:${t}(GraphCapture|Fp8Overlap)GpuTest" \
  "0,1,2,3:${t}FourRankOpsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite5/lanes.txt 2>/dev/null
cp /tmp/suite5/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite5/*/tests.txt; do grep -h -A4 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite5 2>/dev/null
