#!/usr/bin/env bash
# Session 21 call 2 (4 GPUs): the 8B demo at tp 4, bf16 and FP8, on session 20's plan choices (made by 8ada758's
# planner, which timed candidates issued call by call) against choices this bundle's planner makes afresh (timed as
# CUDA graph replays, as the demo runs them), alternating A B B A; then tp 2 (8B bf16 and FP8) and 70B tp 4 bf16
# with fresh choices.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
cp $B/plans-s20.properties $O/demo/plans-s20.properties
touch $O/demo/plans-fresh.properties
run_demo() {  # name cache devices tp dims extra
  left=$((540 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  UB_PLAN_CACHE=$O/demo/$2 UB_DEBUG=1 CUDA_VISIBLE_DEVICES=$3 UB_TIMEOUT=20 \
    timeout -k 10 $((left < 120 ? left : 120)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp $4 $5 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $6 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo bf16-s20-1 plans-s20.properties 0,1,2,3 4 "$M8" ""
run_demo bf16-fresh-1 plans-fresh.properties 0,1,2,3 4 "$M8" ""
run_demo bf16-fresh-2 plans-fresh.properties 0,1,2,3 4 "$M8" ""
run_demo bf16-s20-2 plans-s20.properties 0,1,2,3 4 "$M8" ""
run_demo fp8-s20-1 plans-s20.properties 0,1,2,3 4 "$M8" "--fp8"
run_demo fp8-fresh-1 plans-fresh.properties 0,1,2,3 4 "$M8" "--fp8"
run_demo fp8-fresh-2 plans-fresh.properties 0,1,2,3 4 "$M8" "--fp8"
run_demo fp8-s20-2 plans-s20.properties 0,1,2,3 4 "$M8" "--fp8"
run_demo tp2-bf16-fresh plans-fresh.properties 0,1 2 "$M8" ""
run_demo tp2-fp8-fresh plans-fresh.properties 0,1 2 "$M8" "--fp8"
run_demo 70b-tp4-bf16-fresh plans-fresh.properties 0,1,2,3 4 "$M70" ""
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|MFU|Exception|rror" $f | head -12 | cut -c1-150; done
