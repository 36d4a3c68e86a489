#!/usr/bin/env bash
# Session 24 call 3 (2 GPUs): the LayerNorm forward's word kernel and the backward's FMA roundings with one barrier a
# row (ae065b4): LayerKernelsGpuTest (GPU 0) beside TpLayersGpuTest (GPUs 0,1 after it); then `bench kernels
# --kernels layernorm_fwd,layernorm_bwd` on 10e396a's jars (old) and this bundle's (new), A B B A A B (GPU 0); then
# both kernels beside their PyTorch twins, 2 alternating rounds (GPU 0).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite3 STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0,1:${t}LayerKernelsGpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite3/lanes.txt 2>/dev/null
for f in /tmp/suite3/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab3
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/lib/*"
  CUDA_VISIBLE_DEVICES=0 timeout -k 5 60 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_fwd,layernorm_bwd --iters 30 --out /tmp/ab3/$i-$side.json > /tmp/ab3/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "layernorm" /tmp/ab3/$i-$side.log | head -8
done
CUDA_VISIBLE_DEVICES=0 OUT=/tmp/kt3 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh \
  "kernels=2 --kernels layernorm_fwd,layernorm_bwd --iters 30 -- --kernels layernorm_fwd,layernorm_bwd --iters 30"
echo "kernels rc=$?"
tar czf $O/suite.tgz -C /tmp suite3 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab3
tar czf $O/kernels.tgz -C /tmp kt3
grep -h -E "layernorm" /tmp/kt3/log.txt 2>/dev/null | head -20
