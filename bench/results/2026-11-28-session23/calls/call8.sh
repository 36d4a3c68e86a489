#!/usr/bin/env bash
# Session 23 call 8 (one GPU): the staged LayerNorm backward with gamma as floats and the row re-read from its slot
# (104e824): LayerKernelsGpuTest, then `bench kernels --kernels layernorm_bwd` on 10e396a's jars (old) and this
# bundle's (new), A B B A A B, at every layer shape.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "FAILED" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab8
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/lib/*"
  timeout -k 5 60 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --kernels layernorm_bwd --iters 30 \
    --out /tmp/ab8/$i-$side.json > /tmp/ab8/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "layernorm_bwd" /tmp/ab8/$i-$side.log | head -8
done
tar czf $O/suite.tgz -C /tmp suite8 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab8
