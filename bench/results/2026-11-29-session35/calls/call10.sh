#!/usr/bin/env bash
# Session 35 call 10 (one GPU), bundle 7d92bcf: the forward's word kernels without bound checks on whole rows (the
# output pass keeping its check). LayerKernelsGpuTest; `bench kernels --kernels layernorm_fwd`, three sides: old =
# 092a5ef's kernels jar first on the class path, A = this bundle, B = this bundle's tree with the output pass
# unchecked too (kernels jar built here, .gpu/old/ubuf-kernels-fullB.jar): old A B B A old at 8192 tokens, old A B
# at 4096.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite10 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite10/lanes.txt 2>/dev/null
cp /tmp/suite10/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite10/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab10
i=0
for run in old:8192 A:8192 B:8192 B:8192 A:8192 old:8192 old:4096 A:4096 B:4096; do
  i=$((i+1)); side=${run%%:*}; tok=${run##*:}
  case $side in
    old) cp="$B/old/ubuf-kernels-092a5ef.jar:$B/lib/*" ;;
    B) cp="$B/old/ubuf-kernels-fullB.jar:$B/lib/*" ;;
    *) cp="$B/lib/*" ;;
  esac
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 --tokens $tok \
    --kernels layernorm_fwd --out /tmp/ab10/$i-$side-$tok.json > /tmp/ab10/$i-$side-$tok.log 2>&1
  echo "$i $side $tok rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab10/$i-$side-$tok.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab10
echo "done t=$((SECONDS-start))"
