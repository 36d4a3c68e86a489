#!/usr/bin/env bash
# Session 17 call 5 (2 GPUs): 61fa421 (the planner measures in-ubuf all-gathers on values; FP8's amax all-reduce
# beside the SGD update) beside 3184c8c, alternating, 8B tp 2, bf16 and FP8, each from an empty plan cache with the
# planner's tables printed; StepGraphGpuTest and DemoGpuTest first; then both traced at 61fa421.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}(StepGraph|Demo)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
THIRD=$(ls $B/lib/*.jar | grep -v '/ubuf-' | grep -v console-standalone | paste -sd: -)
OLD="$(ls $B/old/ubuf-*.jar | paste -sd: -):$B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar:$THIRD"; NEW="$B/lib/*"
mkdir -p $O/demo
run_demo() {  # name classpath extra
  left=$((575 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 UB_PLAN_CACHE=off UB_DEBUG=1 timeout -k 10 $((left < 80 ? left : 80)) bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16-new-1 "$NEW" ""
run_demo bf16-old-1 "$OLD" ""
run_demo fp8-new-1 "$NEW" "--fp8"
run_demo fp8-old-1 "$OLD" "--fp8"
run_demo bf16-old-2 "$OLD" ""
run_demo bf16-new-2 "$NEW" ""
run_demo fp8-old-2 "$OLD" "--fp8"
run_demo fp8-new-2 "$NEW" "--fp8"
run_demo bf16-new-trace "$NEW" "--trace $O/demo/trace-8b-tp2-bf16.json"
run_demo fp8-new-trace "$NEW" "--fp8 --trace $O/demo/trace-8b-tp2-fp8.json"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|method: auto ran|Exception|rror" $f | head -10 | cut -c1-200; done
tar czf $O/call5.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
