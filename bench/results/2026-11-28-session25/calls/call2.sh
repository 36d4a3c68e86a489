#!/usr/bin/env bash
# Session 25 call 2 (2 GPUs): the 8B tp 2 demo with the bias in the GEMM's epilogue (7614895) against the same jars with
# -Dubuf.fuseGemmBias=false (the bias a pass of its own, as before), bf16 A B B A, FP8 B A, each planning afresh
# (the planner measures the ring's fused tail with and without the epilogue bias).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo2
i=0
for run in bf16:off bf16:on bf16:on bf16:off fp8:on fp8:off; do
  i=$((i+1)); mode=${run%%:*}; side=${run##*:}
  left=$((520 - (SECONDS - start))); [ $left -lt 40 ] && { echo "demo $i skipped"; continue; }
  prop=""; [ $side = off ] && prop="-Dubuf.fuseGemmBias=false"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 70 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $extra --out /tmp/demo2/$i-$mode-$side.json \
    > /tmp/demo2/$i-$mode-$side.log 2>&1
  echo "demo $i $mode $side rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|method: auto|untuned" /tmp/demo2/$i-$mode-$side.log | cut -c1-170
done
tar czf $O/demo.tgz -C /tmp demo2
