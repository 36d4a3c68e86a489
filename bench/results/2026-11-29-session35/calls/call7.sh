#!/usr/bin/env bash
# Session 35 call 7 (one GPU), bundle cd8b851: the LayerNorms' rstd from rsqrtf and their means and variances times
# 1 / cols once. LayerKernelsGpuTest; `bench kernels --kernels layernorm_fwd,layernorm_bwd` with 2badab3's kernels
# and layers jars first on the class path (old) and this bundle's (new), A B B A A B at 8192 tokens, A B B A at 4096.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite7/lanes.txt 2>/dev/null
cp /tmp/suite7/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite7/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab7
oldcp="$B/old/ubuf-kernels-2badab3.jar:$B/old/ubuf-layers-2badab3.jar:$B/lib/*"
i=0
for run in old:8192 new:8192 new:8192 old:8192 old:8192 new:8192 old:4096 new:4096 new:4096 old:4096; do
  i=$((i+1)); side=${run%%:*}; tok=${run##*:}
  cp="$B/lib/*"; [ $side = old ] && cp="$oldcp"
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 --tokens $tok \
    --kernels layernorm_fwd,layernorm_bwd --out /tmp/ab7/$i-$side-$tok.json > /tmp/ab7/$i-$side-$tok.log 2>&1
  echo "$i $side $tok rc=$? t=$((SECONDS-start))"
  grep -E "8b .*tp 4" /tmp/ab7/$i-$side-$tok.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab7
echo "done t=$((SECONDS-start))"
