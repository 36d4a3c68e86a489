#!/usr/bin/env bash
# Session 19 call 1 (2 GPUs): c1eca62 (free=1: the GEMMs leave SMs to the graph-safe signal and wait kernels; new
# planner candidates) against d3ca9da's jars (old), 8B tp 2 demo, bf16 and FP8, CUDA graphs, alternating; each side
# plans once into its own cache with its tables printed; then the GPU tests of the free variants.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name side extra [debug]
  left=$((330 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  cp="$B/lib/*"; [ $2 = old ] && cp="$B/old/lib/*"
  UB_PLAN_CACHE=$O/demo/plans-$2.properties UB_DEBUG=${4:-0} CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 \
    timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16-new-1 new "" 1
run_demo bf16-old-1 old "" 1
run_demo fp8-new-1 new "--fp8 --trace $O/demo/trace-fp8-new.json" 1
run_demo fp8-old-1 old "--fp8" 1
run_demo bf16-new-2 new "--trace $O/demo/trace-bf16-new.json"
run_demo bf16-old-2 old ""
run_demo fp8-old-2 old "--fp8"
run_demo fp8-new-2 new "--fp8"
run_demo bf16-new-3 new ""
run_demo fp8-new-3 new "--fp8"
t='dev\.ubuf\..*\.'
left=$((575 - (SECONDS - start)))
OUT=$O/suite STALL_S=90 timeout -k 10 $left bash $B/gpu-lanes.sh "0,1:${t}RingFusedTailGpuTest;${t}OverlapOpsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|Exception|rror" $f | head -9 | cut -c1-160; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
