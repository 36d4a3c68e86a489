#!/usr/bin/env bash
# Session 24 call 10 (one GPU): GELU's dense kernels with a block's words consecutive (map_dense, this bundle):
# LayerKernelsGpuTest; `bench kernels --kernels gelu_fwd,gelu_bwd` on 10e396a's jars (old; GELU's kernels as at 05e887f) and this bundle's (new),
# A B B A A B; both beside their PyTorch twins, 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite10 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite10/lanes.txt 2>/dev/null
cp /tmp/suite10/lanes.txt $O/lanes.txt 2>/dev/null
mkdir -p /tmp/ab10
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --kernels gelu_fwd,gelu_bwd \
    --iters 30 --out /tmp/ab10/$i-$side.json > /tmp/ab10/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab10/$i-$side.log | cut -c1-100 | head -8
done
OUT=/tmp/kt10 ALT_BUDGET_S=100 timeout -k 10 120 bash $B/run-gpu.sh \
  "kernels=2 --kernels gelu_fwd,gelu_bwd --iters 30 -- --kernels gelu_fwd,gelu_bwd --iters 30"
echo "kernels rc=$?"
tar czf $O/suite.tgz -C /tmp suite10 2>/dev/null
mkdir -p $O/ab $O/kernels
cp /tmp/ab10/*.json $O/ab/
cp /tmp/kt10/*.json /tmp/kt10/summary.txt $O/kernels/
