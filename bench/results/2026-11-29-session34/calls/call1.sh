#!/usr/bin/env bash
# Session 34 call 1 (one GPU), bundle 41b0787: the activations on the SFU's 2^x and 1/x. The accuracy probe
# (kernels/probes/gelu_math_probe.cu, both formulas against double); LayerKernelsGpuTest; `bench kernels` on the
# eight activation kernels with 174d44a's kernels jar first on the class path (old) and this bundle's (new),
# A B B A A B; then kernels/probes/bias_gelu_bwd_ahead_probe.cu (rows ahead x blocks an SM) on the new math.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 60 $B/gelu_math > $O/gelu-math.txt 2>&1; echo "math rc=$?"; cat $O/gelu-math.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
K=gelu_fwd,gelu_bwd,bias_gelu_fwd,bias_gelu_bwd,swiglu_fwd,swiglu_bwd,bias_swiglu_fwd,bias_swiglu_bwd
mkdir -p /tmp/ab1
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-174d44a.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels $K --iters 30 --out /tmp/ab1/$i-$side.json > /tmp/ab1/$i-$side.log 2>&1
  echo "$i $side rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab1/$i-$side.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab1
timeout -k 5 60 $B/geluahead > $O/geluahead.txt 2>&1; echo "ahead rc=$? t=$((SECONDS-start))"; cat $O/geluahead.txt
