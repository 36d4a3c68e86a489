#!/usr/bin/env bash
# Session 26 call 2 (4 GPUs): f984b12. GPU tests of the reduce-scatter credits moved to the next call's start and of
# the sequence-parallel gradients reduced beside the update: SequenceParallelGrads + OverlapOps + RingFusedTail (GPUs
# 0,1) beside GraphCapture + Fp8Overlap (GPUs 2,3), then FourRankOps + StepGraph (all four). Then the 8B tp 4 demo,
# old (2f3184d's overlap-rs jar first on the class path: credits at the end of the call) against new, one plan cache
# per dtype written by a first planning run (new): bf16 P O N N O, FP8 P O N N O.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite2 STALL_S=90 timeout -k 10 330 bash $B/gpu-lanes.sh \
  "0,1:${t}(SequenceParallelGrads|OverlapOps|RingFusedTail)GpuTest" "2,3:${t}(GraphCapture|Fp8Overlap)GpuTest" \
  "0,1,2,3:${t}(FourRankOps|StepGraph)GpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite2/lanes.txt 2>/dev/null
cp /tmp/suite2/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite2/*/tests.txt; do grep -h -A4 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite2 2>/dev/null
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo2
i=0
for run in bf16:P bf16:O bf16:N bf16:N bf16:O fp8:P fp8:O fp8:N fp8:N fp8:O; do
  i=$((i+1)); mode=${run%%:*}; jar=${run##*:}
  left=$((570 - (SECONDS - start))); [ $left -lt 35 ] && { echo "demo $i skipped"; continue; }
  cp="$B/lib/*"; [ $jar = O ] && cp="$B/old/*:$B/lib/*"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  UB_PLAN_CACHE=/tmp/demo2/plans-$mode.properties UB_TIMEOUT=20 timeout -k 10 70 \
    bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli demo --tp 4 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks $extra --out /tmp/demo2/$i-$mode-$jar.json > /tmp/demo2/$i-$mode-$jar.log 2>&1
  echo "demo $i $mode $jar rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share" /tmp/demo2/$i-$mode-$jar.log | cut -c1-150
done
grep -h "fc2_fprop" /tmp/demo2/plans-*.properties | cut -c1-200
tar czf $O/demo.tgz -C /tmp demo2
