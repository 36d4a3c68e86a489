#!/usr/bin/env bash
# Session 34 call 5 (one GPU), bundle 889d9e9: the fused activation backwards' dense path. LayerKernelsGpuTest;
# `bench kernels --kernels bias_swiglu_bwd,bias_gelu_bwd` at 8192 tokens on three sides, each side's jars first on
# the class path: old = 4adae00 (SwiGLU four rows ahead at two blocks, no dense path), A = the dense path with
# SwiGLU four rows ahead at two blocks (built here from 889d9e9 with those constants), B = this bundle (the dense
# path, SwiGLU one row ahead at four blocks); order old A B B A old A old B.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite5 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite5/lanes.txt 2>/dev/null
cp /tmp/suite5/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite5/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab5
i=0
for side in old A B B A old A old B; do
  i=$((i+1))
  case $side in
    old) cp="$B/old/ubuf-kernels-4adae00.jar:$B/old/ubuf-layers-4adae00.jar:$B/lib/*" ;;
    A) cp="$B/old/ubuf-kernels-A.jar:$B/old/ubuf-layers-A.jar:$B/lib/*" ;;
    B) cp="$B/lib/*" ;;
  esac
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels bias_swiglu_bwd,bias_gelu_bwd --iters 30 --out /tmp/ab5/$i-$side.json > /tmp/ab5/$i-$side.log 2>&1
  echo "$i $side rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab5/$i-$side.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab5
echo "done t=$((SECONDS-start))"
