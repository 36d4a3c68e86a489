#!/usr/bin/env bash
# Session 17 call 7 (2 GPUs), at 94f96e2 (the session's last code): the 8B tp 2 demo beside PyTorch's TP layer in
# alternating rounds, then 70B tp 2 bf16 and FP8, each from an empty plan cache.
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
  left=$((330 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 UB_PLAN_CACHE=off timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $2 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo 70b-bf16 "$M70" ""
run_demo 70b-fp8 "$M70" "--fp8"
cat $O/gpus.txt $O/times.txt
tail -4 $O/layer8tp2.log | cut -c1-200
for f in $O/layer8tp2/*.txt; do grep -hE "median step|hidden share|torch_nccl  |torch_async " $f | cut -c1-160; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|Exception|rror" $f | head -8 | cut -c1-200; done
tar czf $O/call7.tgz -C $O gpus.txt times.txt demo layer8tp2 layer8tp2.log 2>/dev/null
rm -rf $O/demo $O/layer8tp2 $O/*.log $O/gpus.txt $O/times.txt; ls $O
