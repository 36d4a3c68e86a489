#!/usr/bin/env bash
# Session 31 call 7 (one GPU), bundle 07d0455: the GEMM tuner at margin 5% (no heat). The GEMM GPU tests
# (StreamCandidateBench, GemmTuning, CublasLtGemm); then GEMM parity on the sweep's 88 GEMMs, plain, 3 alternating
# rounds, ubuf tuned afresh.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}(StreamCandidateBench|GemmTuning|CublasLtGemm)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite7/lanes.txt 2>/dev/null
cp /tmp/suite7/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite7/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/xdg7
XDG_CACHE_HOME=/tmp/xdg7 ALT_BUDGET_S=330 timeout -k 10 350 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg7/ubuf/*.tsv $O/parity/ 2>/dev/null
tar czf $O/suite.tgz -C /tmp suite7 2>/dev/null
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
