#!/usr/bin/env bash
# Session 32 call 8 (one GPU), bundle of this commit: the LayerNorm forward's outputs as two FMAs (ln_out).
# LayerKernelsGpuTest; then `bench kernels --kernels layernorm_fwd` on the kernels before (old: 5262dad's kernels jar
# first on the class path) and after (new), A B B A A B, graph replays.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
cp /tmp/suite8/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
tar czf $O/suite.tgz -C /tmp suite8 2>/dev/null
mkdir -p /tmp/ab8
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_fwd --iters 30 --out /tmp/ab8/$i-$side.json > /tmp/ab8/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab8/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab8
