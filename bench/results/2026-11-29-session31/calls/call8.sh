#!/usr/bin/env bash
# Session 31 call 8 (one GPU), bundle of this commit: the GEMM tuner confirming each challenger in its own steady
# state, margin 2%. The GEMM GPU tests; then GEMM parity on the sweep's 88 GEMMs, plain, 3 alternating rounds (fewer
# if the budget ends first), ubuf tuned afresh: against call 5 (the same margin, challengers timed in turn with the
# first) and call 7 (margin 5%).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=60 timeout -k 5 60 bash $B/gpu-lanes.sh "0:${t}(StreamCandidateBench|GemmTuning|CublasLtGemm)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
cp /tmp/suite8/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
tar czf $O/suite.tgz -C /tmp suite8 2>/dev/null
mkdir -p /tmp/xdg8
XDG_CACHE_HOME=/tmp/xdg8 ALT_BUDGET_S=245 timeout -k 5 255 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg8/ubuf/*.tsv $O/parity/ 2>/dev/null
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
