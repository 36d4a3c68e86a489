#!/usr/bin/env bash
# Session 24 call 6 (one GPU): fe26954 (the LayerNorm forward's word kernel with gamma and beta loaded as words, the
# SwiGLU forward's bias likewise, the biased activations' backward with its vector path decided at the entry):
# LayerKernelsGpuTest; `bench kernels` on 10e396a's jars (old) and this bundle's (new), A B B A A B, for the
# LayerNorm forward and backward, the SwiGLU forward and the biased SwiGLU forward and backward; then the LayerNorm
# kernels beside their PyTorch twins, 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite6 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite6/lanes.txt 2>/dev/null
for f in /tmp/suite6/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab6
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_fwd,layernorm_bwd,swiglu_fwd,bias_swiglu_fwd,bias_swiglu_bwd --iters 30 \
    --out /tmp/ab6/$i-$side.json > /tmp/ab6/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab6/$i-$side.log | cut -c1-100 | head -20
done
OUT=/tmp/kt6 ALT_BUDGET_S=100 timeout -k 10 120 bash $B/run-gpu.sh \
  "kernels=2 --kernels layernorm_fwd,layernorm_bwd --iters 30 -- --kernels layernorm_fwd,layernorm_bwd --iters 30"
echo "kernels rc=$?"
tar czf $O/suite.tgz -C /tmp suite6 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab6
tar czf $O/kernels.tgz -C /tmp kt6
