#!/usr/bin/env bash
# Session 19 call 4 (4 GPUs): 7th commit of the session (the planner times graph-safe candidates as graph replays;
# free=F and fanout among its candidates). GraphCaptureGpuTest (GPUs 0,1) beside StepGraphGpuTest (2,3); then the 8B
# demo at tp 4 and tp 2, bf16 and FP8, d3ca9da's jars (old: eager timing, no free or fanout candidates) against the
# new, each side planning once into its own cache (tables printed), then a second round from the caches.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}GraphCaptureGpuTest" "2,3:${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name side tp extra [debug]
  left=$((575 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  cp="$B/lib/*"; [ $2 = old ] && cp="$B/old/lib/*"
  gpus=0,1; [ $3 = 4 ] && gpus=0,1,2,3
  UB_PLAN_CACHE=$O/demo/plans-$2.properties UB_DEBUG=${5:-0} CUDA_VISIBLE_DEVICES=$gpus UB_TIMEOUT=20 \
    timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli \
    demo --tp $3 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $4 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo tp4-bf16-new-1 new 4 "" 1
run_demo tp4-bf16-old-1 old 4 "" 1
run_demo tp4-fp8-new-1 new 4 "--fp8" 1
run_demo tp4-fp8-old-1 old 4 "--fp8" 1
run_demo tp2-bf16-new-1 new 2 "" 1
run_demo tp2-bf16-old-1 old 2 "" 1
run_demo tp2-fp8-new-1 new 2 "--fp8" 1
run_demo tp2-fp8-old-1 old 2 "--fp8" 1
run_demo tp4-bf16-old-2 old 4 ""
run_demo tp4-bf16-new-2 new 4 ""
run_demo tp4-fp8-old-2 old 4 "--fp8"
run_demo tp4-fp8-new-2 new 4 "--fp8"
run_demo tp2-bf16-old-2 old 2 ""
run_demo tp2-bf16-new-2 new 2 ""
run_demo tp2-fp8-old-2 old 2 "--fp8"
run_demo tp2-fp8-new-2 new 2 "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|Exception|rror" $f | head -9 | cut -c1-130; done
tar czf $O/call4.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
