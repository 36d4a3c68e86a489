#!/usr/bin/env bash
# Session 19 call 5 (4 GPUs): 7155340, the session's final product code (the planner timing graph-safe candidates
# as graph replays; free=F and fanout named only). TpLayers + Demo (GPUs 0,1) beside GraphCapture (2,3), then
# StepGraph on all four (its tp 4 cases); the 8B demo at tp 4 (FP8 and bf16, traced) and tp 2 (FP8, bf16), each
# planning from an empty cache, tables printed.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 260 bash $B/gpu-lanes.sh "0,1:${t}TpLayersGpuTest;${t}DemoGpuTest" \
  "2,3:${t}GraphCaptureGpuTest" "0,1,2,3:${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name tp extra
  left=$((560 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  gpus=0,1; [ $2 = 4 ] && gpus=0,1,2,3
  UB_PLAN_CACHE=$O/demo/plans-$1.properties UB_DEBUG=1 CUDA_VISIBLE_DEVICES=$gpus UB_TIMEOUT=20 \
    timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp $2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo tp4-fp8 4 "--fp8 --trace $O/demo/trace-tp4-fp8.json"
run_demo tp4-bf16 4 "--trace $O/demo/trace-tp4-bf16.json"
run_demo tp2-fp8 2 "--fp8"
run_demo tp2-bf16 2 ""
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|MFU|Exception|rror" $f | head -9 | cut -c1-130; done
tar czf $O/call5.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
