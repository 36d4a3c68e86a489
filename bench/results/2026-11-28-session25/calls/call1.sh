#!/usr/bin/env bash
# Session 25 call 1 (2 GPUs): the bias in the GEMM's epilogue (7614895). Lane A (GPUs 0,1): OverlapOpsGpuTest +
# GraphCaptureGpuTest + RingFusedTailGpuTest + Fp8OverlapGpuTest, then TpLayersGpuTest; lane B (GPU 1, beside it):
# CublasLtGemmGpuTest (the bias epilogue against float64) and LayerKernelsGpuTest (5dc231e's kernels, not yet run on a
# GPU).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 480 bash $B/gpu-lanes.sh \
  "0,1:${t}(OverlapOps|GraphCapture|RingFusedTail|Fp8Overlap)GpuTest;${t}TpLayersGpuTest" \
  "1:${t}(CublasLtGemm|LayerKernels)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -B2 -A6 -E "✘" $f 2>/dev/null | head -40 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite1 2>/dev/null
