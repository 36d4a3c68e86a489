#!/usr/bin/env bash
# Session 26 call 7 (2 GPUs): 771bc2b, one traced 8B tp 2 step each, bf16 then FP8, planning afresh: where the
# sequence-parallel gradients' all-reduce now runs (beside the update) and fc2's reduce-scatter without its end credit.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo7
for mode in bf16 fp8; do
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  UB_PLAN_CACHE=/tmp/demo7/plans-$mode.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 90 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph \
    --clocks $extra --trace /tmp/demo7/trace-8b-tp2-$mode.json --out /tmp/demo7/8b-$mode.json > /tmp/demo7/8b-$mode.log 2>&1
  echo "demo $mode rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share" /tmp/demo7/8b-$mode.log | cut -c1-150
done
tar czf $O/demo.tgz -C /tmp demo7
