#!/usr/bin/env bash
# Session 18 call 3 (4 GPUs): 30bcbca: StepGraphGpuTest whole (its three tp 4 cases did not run on the 2-GPU
# machines of this and the last session) and DemoGpuTest on GPUs 0-3, RingFusedTailGpuTest again beside nothing;
# then the 8B tp 4 demo, bf16 and FP8, traced (their first traces on H200s), and 70B tp 4 FP8 (not run on H200s).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 260 bash $B/gpu-lanes.sh "0,1,2,3:${t}StepGraphGpuTest;${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run_demo() {  # name dims extra
  left=$((585 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 UB_DEBUG=1 timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $2 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo 8b-tp4-bf16 "$M8" "--trace $O/demo/trace-8b-tp4-bf16.json"
run_demo 8b-tp4-fp8 "$M8" "--fp8 --trace $O/demo/trace-8b-tp4-fp8.json"
run_demo 70b-tp4-fp8 "$M70" "--fp8"
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|SM clock|auto ran|Exception|rror" $f | head -10 | cut -c1-220; done
for f in $O/demo/8b-tp4-*.log; do sed -n '/the traced overlap step against/,/^wrote\|^$/p' $f | head -24; done
tar czf $O/call3.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
