#!/usr/bin/env bash
# Session 20 call 1 (4 GPUs): the benchmark timing replays (bench ag|rs --cuda-graph), signal and wait runs as one
# kernel (graph-safe), scatter's credit waits at the op's start. GraphCapture + OverlapOps (GPUs 0,1) beside
# TpLayers + RingFusedTail (2,3), then FourRankOps + StepGraph on all four; then the 8B FP8 demo at tp 4, A/B in
# rounds: old (8ada758), new, new with -Dubuf.fuseFlagRuns=false, all on the old side's plan choices.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 380 bash $B/gpu-lanes.sh "0,1:${t}GraphCaptureGpuTest;${t}OverlapOpsGpuTest" \
  "2,3:${t}TpLayersGpuTest;${t}RingFusedTailGpuTest" "0,1,2,3:${t}FourRankOpsGpuTest;${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name libdir jvmopt extra
  left=$((560 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  [ -f $O/demo/plans-shared.properties ] || touch $O/demo/plans-shared.properties
  UB_PLAN_CACHE=$O/demo/plans-shared.properties UB_DEBUG=1 CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 \
    timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh $3 -cp "$2/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $4 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo fp8-old-1 $B/old/lib "" "--fp8"
run_demo fp8-new-1 $B/lib "" "--fp8"
run_demo fp8-nofuse-1 $B/lib "-Dubuf.fuseFlagRuns=false" "--fp8"
run_demo fp8-new-2 $B/lib "" "--fp8 --trace $O/demo/trace-tp4-fp8-new.json"
run_demo fp8-old-2 $B/old/lib "" "--fp8"
run_demo fp8-nofuse-2 $B/lib "-Dubuf.fuseFlagRuns=false" "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|MFU|Exception|rror" $f | head -9 | cut -c1-130; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
