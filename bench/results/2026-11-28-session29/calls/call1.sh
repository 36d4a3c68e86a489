#!/usr/bin/env bash
# Session 29 call 1 (one GPU): kernels/probes/layernorm_warp_probe.cu (the LayerNorm forward a warp a row against the
# word kernel; the backward's partial rows cut by clusters of 2, 4, 8); LayerKernelsGpuTest (with the forwards'
# bit-for-bit case); `bench kernels --kernels layernorm_fwd` with the block kernels (-Dubuf.layerNormWarp=false, old)
# and the warp kernel (new), A B B A A B; then the LayerNorm forward beside PyTorch's, 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
timeout -k 5 150 $B/ln_warp > $O/ln-warp-probe.txt 2>&1
echo "probe rc=$?"
cat $O/ln-warp-probe.txt | cut -c1-130
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab1
i=0
for side in old new new old old new; do
  i=$((i+1))
  prop=""; [ $side = old ] && prop="-Dubuf.layerNormWarp=false"
  timeout -k 5 80 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_fwd --iters 30 --out /tmp/ab1/$i-$side.json > /tmp/ab1/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab1/$i-$side.log | cut -c1-110 | head -8
done
OUT=/tmp/kt1 ALT_BUDGET_S=100 timeout -k 10 120 bash $B/run-gpu.sh \
  "kernels=2 --kernels layernorm_fwd --iters 30 -- --kernels layernorm_fwd --iters 30"
echo "kernels rc=$?"
grep -h "of copy" /tmp/kt1/*.log 2>/dev/null | head -12
tar czf $O/suite.tgz -C /tmp suite1 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab1
mkdir -p /tmp/kernels1 && cp /tmp/kt1/*.json /tmp/kt1/summary.txt /tmp/kernels1/ 2>/dev/null; tar czf $O/kernels.tgz -C /tmp kernels1
