#!/usr/bin/env bash
# Session 34 call 6 (one GPU), bundle 6517427 (the session's kernels): LayerKernelsGpuTest; `bench kernels
# --kernels bias_swiglu_bwd,bias_gelu_bwd` with 4adae00's kernels and layers jars first on the class path (old) and
# this bundle's (new), A B B A at 4096 and at 16384 tokens (shapes the choice was not read from) and at 8192; then
# every layer kernel beside its PyTorch twin, 2 alternating rounds, for the results table.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite6 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite6/lanes.txt 2>/dev/null
cp /tmp/suite6/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite6/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab6
for tok in 4096 16384 8192; do
  i=0
  for side in old new new old; do
    i=$((i+1))
    cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-4adae00.jar:$B/old/ubuf-layers-4adae00.jar:$B/lib/*"
    timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --kernels bias_swiglu_bwd,bias_gelu_bwd \
      --tokens $tok --iters 30 --out /tmp/ab6/t$tok-$i-$side.json > /tmp/ab6/t$tok-$i-$side.log 2>&1
    echo "$tok $i $side rc=$? t=$((SECONDS-start))"
    grep -E "tp " /tmp/ab6/t$tok-$i-$side.log | cut -c1-110
  done
done
tar czf $O/ab.tgz -C /tmp ab6
OUT=/tmp/kt6 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
grep -h "% of copy" /tmp/kt6/*.log 2>/dev/null | grep -E "layernorm|swiglu|gelu" | cut -c1-110 | head -48
mkdir -p /tmp/kernels6 && cp /tmp/kt6/*.json /tmp/kt6/summary.txt /tmp/kernels6/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels6
echo "done t=$((SECONDS-start))"
