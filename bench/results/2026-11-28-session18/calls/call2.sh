#!/usr/bin/env bash
# Session 18 call 2 (2 GPUs): 5fd2fa4 (ring direct=1: the GEMMs store their sums into the neighbour's slot):
# RingFusedTailGpuTest (17, its 8 direct cases new); the 8B tp 2 demo traced, bf16 and FP8, the planner's tables
# printed (direct among fc2's candidates); then a231808 (old) and 5fd2fa4 (new) alternating, 2 rounds, bf16 and FP8,
# every run from an empty plan cache (separate GEMM tuning caches for old and new); then 70B tp 2 on new.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}RingFusedTailGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
THIRD=$(ls $B/lib/*.jar | grep -v '/ubuf-' | grep -v console-standalone | paste -sd: -)
OLD="$(ls $B/old/ubuf-*.jar | paste -sd: -):$B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar:$THIRD"
NEW="$B/lib/*"
mkdir -p $O/demo $O/cache-old $O/cache-new
run_demo() {  # name classpath cache dims extra
  left=$((585 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  XDG_CACHE_HOME=$3 CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 UB_PLAN_CACHE=off UB_DEBUG=1 timeout -k 10 $((left < 80 ? left : 80)) bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli \
    demo --tp 2 $4 --iters 20 --config $B/auto.yaml --cuda-graph $5 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16-new-trace "$NEW" $O/cache-new "$M8" "--trace $O/demo/trace-8b-tp2-bf16.json"
run_demo fp8-new-trace "$NEW" $O/cache-new "$M8" "--fp8 --trace $O/demo/trace-8b-tp2-fp8.json"
run_demo bf16-old-0 "$OLD" $O/cache-old "$M8" ""
for r in 1 2; do
  run_demo bf16-old-$r "$OLD" $O/cache-old "$M8" ""
  run_demo bf16-new-$r "$NEW" $O/cache-new "$M8" ""
  run_demo fp8-new-$r "$NEW" $O/cache-new "$M8" "--fp8"
  run_demo fp8-old-$r "$OLD" $O/cache-old "$M8" "--fp8"
done
run_demo 70b-bf16-new "$NEW" $O/cache-new "$M70" ""
run_demo 70b-fp8-new "$NEW" $O/cache-new "$M70" "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran .* for fc2_fprop|Exception|rror" $f | head -7 | cut -c1-160; done
grep -h -A32 "plan rs tp2 bf16 m8192 k7168 n4096 bias" $O/demo/bf16-new-trace.log | grep -E "ring|nccl|chosen" | head -24
grep -h -A32 "plan rs tp2 bf16 m8192 k7168 n4096 bias fp8" $O/demo/fp8-new-trace.log | grep -E "ring|nccl|chosen" | head -24
tar czf $O/call2.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/cache-* $O/*.log $O/gpus.txt $O/times.txt; ls $O
