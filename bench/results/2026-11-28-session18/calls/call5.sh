#!/usr/bin/env bash
# Session 18 call 5 (2 GPUs): b92221a (no_comm primed with two steps): DemoGpuTest; then the 8B tp 2 demo traced,
# FP8 and bf16, with 12de58c's demo (one priming step: old) and b92221a's (new) alternating: does no_comm's FP8
# backward now run its GEMMs as slowly as no_overlap's (the gathered gradients no longer E5M2 zeros)?
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0,1:${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
OLD="$B/old/ubuf-bench-0.1.0-SNAPSHOT.jar:$(ls $B/lib/*.jar | grep -v ubuf-bench | grep -v console-standalone | paste -sd: -)"
NEW="$B/lib/*"
mkdir -p $O/demo
run_demo() {  # name classpath extra
  left=$((570 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 $((left < 80 ? left : 80)) bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo fp8-new-1 "$NEW" "--fp8 --trace $O/demo/trace-fp8-new-1.json"
run_demo fp8-old-1 "$OLD" "--fp8 --trace $O/demo/trace-fp8-old-1.json"
run_demo bf16-new-1 "$NEW" "--trace $O/demo/trace-bf16-new-1.json"
run_demo fp8-old-2 "$OLD" "--fp8"
run_demo fp8-new-2 "$NEW" "--fp8"
run_demo fp8-new-3 "$NEW" "--fp8"
run_demo fp8-old-3 "$OLD" "--fp8"
run_demo bf16-old-2 "$OLD" ""
run_demo bf16-new-2 "$NEW" ""
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|Exception|rror" $f | head -5 | cut -c1-160; sed -n '/the traced no_overlap step against/,/^wrote\|^$/p' $f | head -10; done
tar czf $O/call5.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
