#!/usr/bin/env bash
# Session 32 call 11 (one GPU), bundle of this commit: the fused bias + activation backwards with longer parts
# (biasActivationRowsPerPart). LayerKernelsGpuTest; then `bench kernels --kernels bias_swiglu_bwd` with the layers
# jar before (old: 891e4c3's first on the class path) and after (new), A B B A A B, graph replays.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite11 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite11/lanes.txt 2>/dev/null
cp /tmp/suite11/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite11/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
tar czf $O/suite.tgz -C /tmp suite11 2>/dev/null
mkdir -p /tmp/ab11
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-layers.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels bias_swiglu_bwd --iters 30 --out /tmp/ab11/$i-$side.json > /tmp/ab11/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab11/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab11
