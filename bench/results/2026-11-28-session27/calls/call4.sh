#!/usr/bin/env bash
# Session 27 call 4 (4 GPUs): 341f55c's GPU tests for the twenty-sixth session's CPU-only changes (384d60e: one
# predicate for a GEMM whose next step's bias rides in its epilogue, used by the CUDA executor, the GEMMs-only plan and
# Fp8OverlapGpuTest's helper; 341f55c: TpContext.endStepBeside reduces only non-empty gradients):
# RingFusedTail, SequenceParallelGrads, TpLayers (GPUs 0,1) beside Fp8Overlap (GPUs 2,3), then StepGraph (all four).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
echo "commit $(cat $B/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite4 STALL_S=90 timeout -k 10 320 bash $B/gpu-lanes.sh \
  "0,1:${t}(RingFusedTail|SequenceParallelGrads)GpuTest;${t}TpLayersGpuTest" "2,3:${t}Fp8OverlapGpuTest" \
  "0,1,2,3:${t}StepGraphGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite4/lanes.txt 2>/dev/null
cp /tmp/suite4/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite4/*/tests.txt; do grep -h -A4 "FAILED\|\[X\]" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite4 2>/dev/null
