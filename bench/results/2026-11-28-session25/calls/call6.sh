#!/usr/bin/env bash
# Session 25 call 6 (4 GPUs): the bias in the GEMM's epilogue (on) against -Dubuf.fuseGemmBias=false (off) at tp 4,
# each run planning afresh: the 8B demo bf16 off on on off, FP8 on off; the 70B demo (8192/28672, 16384 tokens) bf16
# on off.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p /tmp/demo6
i=0
for run in 8b:bf16:off 8b:bf16:on 8b:bf16:on 8b:bf16:off 8b:fp8:on 8b:fp8:off 70b:bf16:on 70b:bf16:off; do
  i=$((i+1)); dims=${run%%:*}; rest=${run#*:}; mode=${rest%%:*}; side=${rest##*:}
  left=$((540 - (SECONDS - start))); [ $left -lt 60 ] && { echo "demo $i skipped"; continue; }
  prop=""; [ $side = off ] && prop="-Dubuf.fuseGemmBias=false"
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  M=$M8; [ $dims = 70b ] && M=$M70
  UB_PLAN_CACHE=/tmp/demo6/plans-$i.properties UB_TIMEOUT=30 timeout -k 10 100 \
    bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 4 $M --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks $extra --out /tmp/demo6/$i-$dims-$mode-$side.json > /tmp/demo6/$i-$dims-$mode-$side.log 2>&1
  echo "demo $i $dims $mode $side rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|method: auto ran .* fc2_fprop" /tmp/demo6/$i-$dims-$mode-$side.log | cut -c1-150
done
tar czf $O/demo.tgz -C /tmp demo6
