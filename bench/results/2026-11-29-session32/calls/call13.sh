#!/usr/bin/env bash
# Session 32 call 13 (one GPU), bundle of this commit: `bench kernels --kernels bias_gelu_fwd,bias_gelu_bwd` (new in
# this commit's bench) with the layers jar before the fused backwards' longer parts (old: 891e4c3's first on the
# class path) and after (new), A B B A, graph replays.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/ab13
i=0
for side in old new new old; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-layers.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels bias_gelu_fwd,bias_gelu_bwd --iters 30 --out /tmp/ab13/$i-$side.json > /tmp/ab13/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab13/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab13
