#!/usr/bin/env bash
# Session 25 call 4 (2 GPUs): 54ace32. RingFusedTailGpuTest + Fp8OverlapGpuTest (GPUs 0,1) beside CublasLtGemmGpuTest
# (GPU 1): the bias epilogue's tests as corrected after call 1. Then the 8B tp 2 demo, the bias in the GEMM's epilogue
# (on) against -Dubuf.fuseGemmBias=false (off), each run planning afresh (its own empty plan cache): bf16 off on on
# off, FP8 on off.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite4 STALL_S=90 timeout -k 10 300 bash $B/gpu-lanes.sh \
  "0,1:${t}(RingFusedTail|Fp8Overlap)GpuTest" "1:${t}CublasLtGemmGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite4/lanes.txt 2>/dev/null
cp /tmp/suite4/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite4/*/tests.txt; do grep -h -A3 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite4 2>/dev/null
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo4
i=0
for run in bf16:off bf16:on bf16:on bf16:off fp8:on fp8:off; do
  i=$((i+1)); mode=${run%%:*}; side=${run##*:}
  left=$((540 - (SECONDS - start))); [ $left -lt 40 ] && { echo "demo $i skipped"; continue; }
  prop=""; [ $side = off ] && prop="-Dubuf.fuseGemmBias=false"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  UB_PLAN_CACHE=/tmp/demo4/plans-$i.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 70 \
    bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks $extra --out /tmp/demo4/$i-$mode-$side.json > /tmp/demo4/$i-$mode-$side.log 2>&1
  echo "demo $i $mode $side rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|method: auto ran .* fc2_fprop" /tmp/demo4/$i-$mode-$side.log | cut -c1-150
done
tar czf $O/demo.tgz -C /tmp demo4
