#!/usr/bin/env bash
# Session 34 call 4 (one GPU), bundle 089f5b9: the fused bias + SwiGLU backward one row ahead at four blocks an SM.
# LayerKernelsGpuTest; `bench kernels --kernels bias_swiglu_bwd` with 4adae00's kernels and layers jars first on the
# class path (old: four rows ahead at two blocks) and this bundle's (new), A B B A A B at 8192 tokens, A B B A at
# 4096 and 16384 tokens.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite4 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite4/lanes.txt 2>/dev/null
cp /tmp/suite4/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite4/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab4
ab() {  # tokens, sides...
  local tok=$1; shift; local i=0
  for side in "$@"; do
    i=$((i+1))
    cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-4adae00.jar:$B/old/ubuf-layers-4adae00.jar:$B/lib/*"
    timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --kernels bias_swiglu_bwd \
      --tokens $tok --iters 30 --out /tmp/ab4/t$tok-$i-$side.json > /tmp/ab4/t$tok-$i-$side.log 2>&1
    echo "$tok $i $side rc=$? t=$((SECONDS-start))"
    grep -E "tp " /tmp/ab4/t$tok-$i-$side.log | cut -c1-110
  done
}
ab 8192 old new new old old new
ab 4096 old new new old
ab 16384 old new new old
tar czf $O/ab.tgz -C /tmp ab4
echo "done t=$((SECONDS-start))"
