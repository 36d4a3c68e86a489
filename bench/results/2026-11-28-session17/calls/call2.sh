#!/usr/bin/env bash
# Session 17 call 2 (2 GPUs): does no_comm run faster because its GEMMs multiply zeros? The 8B tp 2 demo with
# --clocks at 71a5111 (no_comm never gathers: zeros in its peers' slots) beside 3184c8c (no_comm's first step
# gathers real values), the latter traced; then FP8 and 70B at 3184c8c; LayerKernels (the LayerNorm forward at 64
# registers) and bench kernels layernorm_fwd beside PyTorch.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run_demo() {  # name classpath dims extra
  left=$((440 - (SECONDS - start)))
  [ $left -lt 45 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli \
    demo --tp 2 $3 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $4 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
OLD="$B/old/*:$B/lib/*"; NEW="$B/lib/*"
run_demo 8b-bf16-old "$OLD" "$M8" ""
run_demo 8b-bf16-new "$NEW" "$M8" "--trace $O/demo/trace-8b-tp2-bf16.json"
run_demo 8b-bf16-old2 "$OLD" "$M8" ""
run_demo 8b-fp8-new "$NEW" "$M8" "--fp8"
run_demo 70b-bf16-new "$NEW" "$M70" ""
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 100 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((575 - (SECONDS - start)))
if [ $left -gt 40 ]; then
  mkdir -p $O/kernels
  CUDA_VISIBLE_DEVICES=0 OUT=$O/kernels ALT_BUDGET_S=$((left - 15)) timeout -k 10 $((left - 5)) bash $B/run-gpu.sh \
    "kernels=3 --iters 30 --kernels layernorm_fwd -- --iters 30 --kernels layernorm_fwd" > $O/kernels.log 2>&1
  echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|SM clock|Exception|rror" $f | head -14 | cut -c1-330; done
tail -4 $O/kernels.log 2>/dev/null | cut -c1-200
tar czf $O/call2.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo kernels kernels.log 2>/dev/null
rm -rf $O/suite $O/demo $O/kernels $O/*.log $O/gpus.txt $O/times.txt; ls $O
