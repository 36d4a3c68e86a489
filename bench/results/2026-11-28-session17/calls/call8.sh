#!/usr/bin/env bash
# Session 17 call 8 (4 GPUs), at 94f96e2: the 8B and 70B tp 4 demos with no_comm on real values (bf16, FP8).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run_demo() {  # name dims extra
  left=$((150 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 UB_PLAN_CACHE=off timeout -k 10 $((left < 60 ? left : 60)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $2 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo 8b-tp4-bf16 "$M8" ""
run_demo 8b-tp4-fp8 "$M8" "--fp8"
run_demo 70b-tp4-bf16 "$M70" ""
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|Exception|rror" $f | head -8 | cut -c1-200; done
tar czf $O/call8.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
