#!/usr/bin/env bash
# Session 30 call 6 (one GPU), 99ac482: the GEMM classes' GPU tests (StreamCandidateBenchGpuTest new, GemmTuning,
# CublasLtGemm), then GEMM parity on the sweep's 88 GEMMs as call 5 (ubuf tuned afresh by the product's online tuner,
# now confirming back to back, beside cuBLASLt's first choice and torch.matmul, 3 alternating rounds).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}(StreamCandidateBench|GemmTuning|CublasLtGemm)GpuTest" > $O/suite.log 2>&1
echo "== suite rc=$?"; tail -5 $O/suite.log
mkdir -p /tmp/xdg-fresh6
XDG_CACHE_HOME=/tmp/xdg-fresh6 ALT_BUDGET_S=380 timeout -k 10 400 \
  bash $B/run-gpu.sh "parity=3 --variant 32:0 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$?"
python3 $B/parity-summary.py $O/parity
cp /tmp/xdg-fresh6/ubuf/*.tsv $O/parity/ 2>/dev/null
cd $O && tar czf parity.tgz parity run.log log.txt summary.txt 2>/dev/null; rm -rf parity; tar czf suite.tgz suite suite.log 2>/dev/null; rm -rf suite
