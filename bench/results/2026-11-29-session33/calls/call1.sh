#!/usr/bin/env bash
# Session 33 call 1 (one GPU), bundle of this commit: the biased GELU probe (kernels/probes/bias_gelu_probe.cu: the
# product's forward and backward against dense-word walks), then StreamCandidateBench and GemmTuning GPU tests
# (8663d71 moved StreamCandidateBench's back-to-back timing onto the project's Closer; CPU-checked only until now).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/biasgelu > $O/biasgelu.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/biasgelu.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}(StreamCandidateBench|GemmTuning)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt /tmp/suite1/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
