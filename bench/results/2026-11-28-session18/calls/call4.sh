#!/usr/bin/env bash
# Session 18 call 4 (2 GPUs): 12de58c (the demo traces the no_overlap step too): DemoGpuTest; then the 8B tp 2 demo
# traced, FP8 and bf16, twice each: do the same-kind GEMMs that run slower in the overlap step than in no_comm also
# run slower in no_overlap (same ops as no_comm, real collectives: the data), or not (the company)?
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0,1:${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name extra
  left=$((570 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 $((left < 80 ? left : 80)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $2 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo fp8-1 "--fp8 --trace $O/demo/trace-fp8-1.json"
run_demo bf16-1 "--trace $O/demo/trace-bf16-1.json"
run_demo fp8-2 "--fp8 --trace $O/demo/trace-fp8-2.json"
run_demo bf16-2 "--trace $O/demo/trace-bf16-2.json"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|Exception|rror" $f | head -5 | cut -c1-160; sed -n '/the traced no_overlap step against/,/^wrote\|^$/p' $f | head -22; done
tar czf $O/call4.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
