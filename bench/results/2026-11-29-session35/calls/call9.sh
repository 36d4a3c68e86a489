#!/usr/bin/env bash
# Session 35 call 9 (one GPU), bundle 092a5ef: the paired LayerNorm forward chosen by the driver's occupancy.
# LayerKernelsGpuTest; `bench kernels --kernels layernorm_fwd` with 881e8bb's core, kernels and layers jars first on
# the class path (old: the launch bounds' floor) and this bundle's (new), A B B A at 4608 tokens (8B tp 4: 1152
# rows, which the word kernel holds in one wave of 9 blocks an SM) and A B at 8192.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite9 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite9/lanes.txt 2>/dev/null
cp /tmp/suite9/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite9/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab9
oldcp="$B/old/ubuf-core-881e8bb.jar:$B/old/ubuf-kernels-881e8bb.jar:$B/old/ubuf-layers-881e8bb.jar:$B/lib/*"
i=0
for run in old:4608 new:4608 new:4608 old:4608 old:8192 new:8192; do
  i=$((i+1)); side=${run%%:*}; tok=${run##*:}
  cp="$B/lib/*"; [ $side = old ] && cp="$oldcp"
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 --tokens $tok \
    --kernels layernorm_fwd --out /tmp/ab9/$i-$side-$tok.json > /tmp/ab9/$i-$side-$tok.log 2>&1
  echo "$i $side $tok rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab9/$i-$side-$tok.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab9
echo "done t=$((SECONDS-start))"
