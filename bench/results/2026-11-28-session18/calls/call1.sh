#!/usr/bin/env bash
# Session 18 call 1 (2 GPUs): 0fb634c (fc2's bias gradient beside the GEMMs on the side stream; the staged bulk
# reduce-scatter's local sum at normal priority): TpLayersGpuTest and StepGraphGpuTest (tp 2 cases) on it; then
# three builds alternating, 8B tp 2, bf16 and FP8: old = a231808, mid = 0fb634c's layers jar with a231808's others
# (the bias change alone), new = 0fb634c; three rounds; both dtypes traced on new, with the GEMM tuning file kept.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}TpLayersGpuTest;${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
THIRD=$(ls $B/lib/*.jar | grep -v '/ubuf-' | grep -v console-standalone | paste -sd: -)
OLD="$(ls $B/old/ubuf-*.jar | paste -sd: -):$B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar:$THIRD"
MID="$(ls $B/old/ubuf-*.jar | grep -v ubuf-layers | paste -sd: -):$B/lib/ubuf-layers-0.1.0-SNAPSHOT.jar:$B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar:$THIRD"
NEW="$B/lib/*"
mkdir -p $O/demo
run_demo() {  # name classpath extra
  left=$((580 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 UB_DEBUG=1 timeout -k 10 $((left < 70 ? left : 70)) bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
UB_GEMM_TUNING_FILE=$O/demo/tuning-bf16.tsv run_demo bf16-new-trace "$NEW" "--trace $O/demo/trace-8b-tp2-bf16.json"
UB_GEMM_TUNING_FILE=$O/demo/tuning-fp8.tsv run_demo fp8-new-trace "$NEW" "--fp8 --trace $O/demo/trace-8b-tp2-fp8.json"
for r in 1 2 3; do
  if [ $r = 2 ]; then order="new mid old"; else order="old mid new"; fi
  for d in bf16 fp8; do
    x=""; [ $d = fp8 ] && x="--fp8"
    for v in $order; do
      case $v in old) cp="$OLD";; mid) cp="$MID";; new) cp="$NEW";; esac
      run_demo $d-$v-$r "$cp" "$x"
    done
  done
done
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|Exception|rror" $f | head -6 | cut -c1-160; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
