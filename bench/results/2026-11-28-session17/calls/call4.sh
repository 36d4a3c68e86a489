#!/usr/bin/env bash
# Session 17 call 4 (2 GPUs), at 3184c8c: the layer's step check (UB_STEP_CHECK=1: the planner's several-stream
# choices against one-stream candidates in whole steps) against the default, alternating, 8B tp 2, bf16 then FP8,
# each from an empty plan cache with the planner's tables printed (UB_DEBUG=1).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run_demo() {  # name check extra
  left=$((560 - (SECONDS - start)))
  [ $left -lt 45 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 UB_PLAN_CACHE=off UB_DEBUG=1 UB_STEP_CHECK=$2 timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16-default-1 0 ""
run_demo bf16-check-1 1 ""
run_demo bf16-check-2 1 ""
run_demo bf16-default-2 0 ""
run_demo fp8-default-1 0 "--fp8"
run_demo fp8-check-1 1 "--fp8"
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|step check|method: auto ran|Exception|rror" $f | head -14 | cut -c1-400; done
tar czf $O/call4.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
