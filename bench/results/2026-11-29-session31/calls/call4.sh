#!/usr/bin/env bash
# Session 31 call 4 (one GPU), bundle 700b4f6: the GEMM tuner's back-to-back confirmation after a heat. The GEMM GPU
# tests (StreamCandidateBench, GemmTuning, CublasLtGemm); then GEMM parity on 13 sweep shapes, ubuf tuned afresh by
# the heated tuner, cuBLASLt's first interleaved (--variant 32:0), 3 alternating rounds: the five shapes whose tuned
# choice ran 2.4-5.3% slower than torch.matmul in call 1 and eight where the tuned choice won there.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite4 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}(StreamCandidateBench|GemmTuning|CublasLtGemm)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite4/lanes.txt 2>/dev/null
cp /tmp/suite4/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite4/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/xdg4
shapes="2048,2048,4096 16384,13824,5120 16384,8192,5120 2048,2560,5120 256,2048,4096 4096,2048,4096 16384,2048,4096"
shapes="$shapes 1024,4096,14336 16384,4096,8192 4096,2560,5120 16384,6144,12288 512,4096,3072 256,4096,3072"
XDG_CACHE_HOME=/tmp/xdg4 PARITY_SHAPES="$shapes" ALT_BUDGET_S=300 timeout -k 10 320 \
  bash $B/run-gpu.sh "parity=3 --variant 32:0 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg4/ubuf/*.tsv $O/parity/ 2>/dev/null
tar czf $O/suite.tgz -C /tmp suite4 2>/dev/null
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
