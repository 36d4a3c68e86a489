#!/usr/bin/env bash
# Session 17 call 3 (2 GPUs), at 3184c8c (no_comm's first step gathers real values): the 8B tp 2 demo beside
# PyTorch's TP layer in alternating rounds; the 8B tp 2 FP8 step traced; DemoGpuTest (the demo's no_comm priming
# step); 70B tp 2 FP8.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=130 timeout -k 10 145 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > $O/layer8tp2.log 2>&1
echo "layer rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
run_demo() {  # name dims extra
  left=$((420 - (SECONDS - start)))
  [ $left -lt 45 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $2 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo 8b-fp8 "$M8" "--fp8 --trace $O/demo/trace-8b-tp2-fp8.json"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 170 bash $B/gpu-lanes.sh "0,1:${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
run_demo 70b-fp8 "$M70" "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
tail -6 $O/layer8tp2.log | cut -c1-250
for f in $O/layer8tp2/layer-demo-r*.txt $O/layer8tp2/*demo*.log; do [ -f $f ] && { echo "== $f"; grep -E "median step|hidden share|SM clock" $f | cut -c1-250; }; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|SM clock|Exception|rror" $f | head -14 | cut -c1-330; done
sed -n '/the traced overlap step against/,$p' $O/demo/8b-fp8.log | head -30 | cut -c1-200
tar czf $O/call3.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo layer8tp2 layer8tp2.log 2>/dev/null
rm -rf $O/suite $O/demo $O/layer8tp2 $O/*.log $O/gpus.txt $O/times.txt; ls $O
