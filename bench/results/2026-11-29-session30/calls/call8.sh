#!/usr/bin/env bash
# Session 30 call 8 (2x H200), 99ac482: the two-GPU classes at the current product (the GEMM tuner that confirms back
# to back, the LayerNorm backward's stores of 8be1305): TpLayers, StepGraph (its tp 4 cases need four GPUs), Fp8Overlap,
# OverlapOps and GemmTuning, one lane on GPUs 0,1.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=120 timeout -k 10 540 bash $B/gpu-lanes.sh "0,1:${t}(TpLayers|StepGraph|Fp8Overlap|OverlapOps|GemmTuning)GpuTest" > $O/suite.log 2>&1
echo "== suite rc=$?"; tail -8 $O/suite.log | cut -c1-400
cp $O/suite/lanes.txt $O/ 2>/dev/null
cd $O && tar czf suite.tgz suite suite.log 2>/dev/null; rm -rf suite
