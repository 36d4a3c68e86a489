#!/usr/bin/env bash
# Session 25 call 3 (2 GPUs): the planner's table for the 8B tp 2 fc2 reduce-scatter (8192x7168x4096, bias, as the
# layer plans it under CUDA graphs), bf16 and FP8, with the bias in the GEMM's epilogue (on) and as a pass of its own
# (off, -Dubuf.fuseGemmBias=false), on / off / off / on.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
mkdir -p /tmp/plan3
i=0
for run in bf16:on bf16:off fp8:off fp8:on; do
  i=$((i+1)); mode=${run%%:*}; side=${run##*:}
  prop=""; [ $side = off ] && prop="-Dubuf.fuseGemmBias=false"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 120 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    plan --op rs --shape 8192,7168,4096 --bias --cuda-graph --tp 2 $extra > /tmp/plan3/$i-$mode-$side.txt 2>&1
  echo "plan $i $mode $side rc=$? t=$((SECONDS-start))"
  grep -v "^\s*$" /tmp/plan3/$i-$mode-$side.txt | tail -30 | cut -c1-160
done
tar czf $O/plan.tgz -C /tmp plan3
