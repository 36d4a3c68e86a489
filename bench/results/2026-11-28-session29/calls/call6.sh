#!/usr/bin/env bash
# Session 29 call 6 (one GPU): the LayerNorm backward's column sums launched dependent on the staged kernel
# (programmatic dependent launch, 3e7f974): LayerKernelsGpuTest (its new case: eager against two graph replays);
# `bench kernels --kernels layernorm_bwd,bias_grad,layernorm_fwd` with plain launches (-Dubuf.programmaticLaunch=false,
# old) and dependent ones (new), A B B A A B; then the LayerNorm kernels beside PyTorch's, 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite6 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite6/lanes.txt 2>/dev/null
cp /tmp/suite6/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite6/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab6
i=0
for side in old new new old old new; do
  i=$((i+1))
  prop=""; [ $side = old ] && prop="-Dubuf.programmaticLaunch=false"
  timeout -k 5 80 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_bwd,layernorm_fwd --iters 30 --out /tmp/ab6/$i-$side.json > /tmp/ab6/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab6/$i-$side.log | grep bwd | cut -c1-110 | head -8
done
OUT=/tmp/kt6 ALT_BUDGET_S=100 timeout -k 10 120 bash $B/run-gpu.sh \
  "kernels=2 --kernels layernorm_fwd,layernorm_bwd --iters 30 -- --kernels layernorm_fwd,layernorm_bwd --iters 30"
echo "kernels rc=$? t=$((SECONDS-start))"
tar czf $O/suite.tgz -C /tmp suite6 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab6
mkdir -p /tmp/kernels6 && cp /tmp/kt6/*.json /tmp/kt6/summary.txt /tmp/kernels6/ 2>/dev/null; tar czf $O/kernels.tgz -C /tmp kernels6
