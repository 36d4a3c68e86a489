#!/usr/bin/env bash
# Session 33 call 3 (one GPU), bundle of this commit: LayerKernelsGpuTest (the biased GELU's column kernel against the
# float64 reference and the map's bits, in place too; the GELU backward at three blocks an SM), then `bench kernels
# --kernels bias_gelu_fwd,bias_gelu_bwd` with the kernels and layers jars of 8663d71 first on the class path (old)
# and this commit's (new), A B B A A B, graph replays.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite3 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite3/lanes.txt 2>/dev/null
cp /tmp/suite3/lanes.txt /tmp/suite3/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite3/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab3
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-layers.jar:$B/old/ubuf-kernels.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels bias_gelu_fwd,bias_gelu_bwd --iters 30 --out /tmp/ab3/$i-$side.json > /tmp/ab3/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab3/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab3
