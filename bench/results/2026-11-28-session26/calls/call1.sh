#!/usr/bin/env bash
# Session 26 call 1 (2 GPUs): 2f3184d. SequenceParallelGradsGpuTest, then StepGraphGpuTest (its tp 2 cases) and
# TpLayersGpuTest (GPUs 0,1). Then the 8B tp 2 demo with the sequence-parallel gradients reduced beside the update
# (B, the default) against in each layer's backward (I, -Dubuf.spGradsBeside=false): one planning run (B) writes the
# plan cache that every later run of that dtype reads, so only the reduction's place changes; bf16 I B B I B I, FP8
# the same.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 280 bash $B/gpu-lanes.sh \
  "0,1:${t}SequenceParallelGradsGpuTest;${t}StepGraphGpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A6 "FAILED\|✘" $f 2>/dev/null | head -40 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite1 2>/dev/null
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo1
i=0
for run in bf16:P bf16:I bf16:B bf16:B bf16:I bf16:B bf16:I fp8:P fp8:I fp8:B fp8:B fp8:I fp8:B fp8:I; do
  i=$((i+1)); mode=${run%%:*}; side=${run##*:}
  left=$((560 - (SECONDS - start))); [ $left -lt 30 ] && { echo "demo $i skipped"; continue; }
  prop=""; [ $side = I ] && prop="-Dubuf.spGradsBeside=false"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  UB_PLAN_CACHE=/tmp/demo1/plans-$mode.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 70 \
    bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks $extra --out /tmp/demo1/$i-$mode-$side.json > /tmp/demo1/$i-$mode-$side.log 2>&1
  echo "demo $i $mode $side rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share" /tmp/demo1/$i-$mode-$side.log | cut -c1-150
done
tar czf $O/demo.tgz -C /tmp demo1
