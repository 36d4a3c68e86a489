#!/usr/bin/env bash
# Session 33 call 10 (one GPU), bundle of this commit: LayerKernelsGpuTest (the fused backwards finishing the bias
# gradient themselves), then `bench kernels --kernels bias_swiglu_bwd,bias_gelu_bwd` with 2e211e2's kernels and layers
# jars first on the class path (old: a separate column-sum kernel) and this commit's (new): 8192 tokens A B B A
# A B, then 4096 and 16384 tokens (shapes the rule was not read from in bench) A B B A each.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite10 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite10/lanes.txt 2>/dev/null
cp /tmp/suite10/lanes.txt /tmp/suite10/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite10/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab10
i=0
run() {
  local side=$1 tokens=$2
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-layers-2e211e2.jar:$B/old/ubuf-kernels-2e211e2.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --tokens $tokens \
    --kernels bias_swiglu_bwd,bias_gelu_bwd --iters 30 --out /tmp/ab10/$i-$side-$tokens.json \
    > /tmp/ab10/$i-$side-$tokens.log 2>&1
  echo "$i $side $tokens rc=$?"
  grep -E "tp " /tmp/ab10/$i-$side-$tokens.log | cut -c1-110 | head -8
}
for side in old new new old old new; do run $side 8192; done
for side in old new new old; do run $side 4096; done
for side in old new new old; do run $side 16384; done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab10
