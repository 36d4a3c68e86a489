#!/usr/bin/env bash
# Session 33 call 8 (one GPU), bundle of this commit: LayerKernelsGpuTest; `bench kernels --kernels bias_gelu_bwd`
# with 9612a01's kernels jar first on the class path (old: four rows ahead) and this commit's (new: three), A B B A;
# then every layer kernel beside its PyTorch twin, 2 alternating rounds (`bench kernels` and
# bench/torch/torch_kernels.py), for the results table.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
cp /tmp/suite8/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab8
i=0
for side in old new new old; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-9612a01.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels bias_gelu_bwd --iters 30 --out /tmp/ab8/$i-$side.json > /tmp/ab8/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab8/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))"
tar czf $O/ab.tgz -C /tmp ab8
OUT=/tmp/kt8 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
grep -h "% of copy" /tmp/kt8/*.log 2>/dev/null | grep -E "gelu|swiglu" | cut -c1-110 | head -24
mkdir -p /tmp/kernels8 && cp /tmp/kt8/*.json /tmp/kt8/summary.txt /tmp/kernels8/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels8
