#!/usr/bin/env bash
# Session 24 call 13 (2 GPUs): waits for received data beside the GEMM ahead of them (1aa35d3: the aggregate
# all-gather and the ring reduce-scatter): GraphCaptureGpuTest + OverlapOpsGpuTest, RingFusedTailGpuTest,
# TpLayersGpuTest (GPUs 0,1); then the 8B tp 2 demo, b6c50ad (old) and 1aa35d3 (new), bf16, A B B A, and FP8 B A,
# each planning afresh.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite13 STALL_S=90 timeout -k 10 300 bash $B/gpu-lanes.sh \
  "0,1:${t}(OverlapOps|GraphCapture|RingFusedTail)GpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite13/lanes.txt 2>/dev/null
cp /tmp/suite13/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite13/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo13
i=0
for run in bf16:old bf16:new bf16:new bf16:old fp8:new fp8:old; do
  i=$((i+1)); mode=${run%%:*}; side=${run##*:}
  left=$((420 - (SECONDS - start))); [ $left -lt 30 ] && { echo "demo $i skipped"; continue; }
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/lib/*"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 60 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli demo --tp 2 $M8 \
    --iters 20 --config $B/auto.yaml --cuda-graph --clocks $extra --out /tmp/demo13/$i-$mode-$side.json \
    > /tmp/demo13/$i-$mode-$side.log 2>&1
  echo "demo $i $mode $side rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share" /tmp/demo13/$i-$mode-$side.log | cut -c1-160
done
tar czf $O/suite.tgz -C /tmp suite13 2>/dev/null
tar czf $O/demo.tgz -C /tmp demo13
