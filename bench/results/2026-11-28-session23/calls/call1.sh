#!/usr/bin/env bash
# Session 23 call 1 (4 GPUs): FourRankOpsGpuTest (its first run of the scatter tail/fuse cases at tp 4), then the 8B
# tp 4 demo, bf16 and FP8, each planning afresh into its own cache (the tp > 2 fused scatter candidates measured).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0,1,2,3:${t}FourRankOpsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name extra
  left=$((560 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  UB_PLAN_CACHE=$O/demo/plans-$1.properties CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 \
    timeout -k 10 $((left < 130 ? left : 130)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $2 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16 ""
run_demo fp8 "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|plan|Exception|rror" $f | head -20 | cut -c1-200; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
