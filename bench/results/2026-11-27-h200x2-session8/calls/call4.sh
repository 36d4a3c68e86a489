#!/usr/bin/env bash
# Session 8 call 4 (2 GPUs) at 1f276ee: the reduce-scatters' last Reduce carrying the bias. GPU tests of every op
# that reduces (OverlapOps, Fp8Overlap, ReductionKernel, BulkOps, TpLayers); then the RS benchmark with a bias and
# the 8B tp 2 demo, each alternating fused / apart (ubuf.fuseReduceBias=false) in one lease.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
OUT=$O/suite STALL_S=90 timeout -k 10 330 bash $B/gpu-lanes.sh "0,1:dev\.ubuf\..*\.(OverlapOps|Fp8Overlap|ReductionKernel|BulkOps|TpLayers)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
for r in 1 2; do
  for v in true false; do
    JAVA_TOOL_OPTIONS=-Dubuf.fuseReduceBias=$v timeout -k 5 60 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --bias --shapes 8192,7168,4096 16384,14336,8192 4096,4096,8192 --methods "auto;ring:sub=4,lowp=1;ring:sub=1,lowp=1" --iters 20 --out $O/rs-$v-r$r.json > $O/rs-$v-r$r.txt 2>&1
    echo "rs fuse=$v r$r rc=$? t=$((SECONDS-start))" >> $O/times.txt
  done
done
mkdir -p $O/demo
for r in 1 2; do
  for v in true false; do
    [ $((SECONDS-start)) -gt 520 ] && break 2
    JAVA_TOOL_OPTIONS=-Dubuf.fuseReduceBias=$v timeout -k 5 60 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --out $O/demo/8b-$v-r$r.json > $O/demo/8b-$v-r$r.txt 2>&1
    echo "demo fuse=$v r$r rc=$? t=$((SECONDS-start))" >> $O/times.txt
  done
done
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
for f in $O/rs-*.txt; do echo "== $f"; grep -E "comm |% of ideal" $f | sed 's/(p10.*gemms/gemms/'; done
for f in $O/demo/*.txt; do echo "== $f"; grep -E "median step overlap|hidden share|MFU" $f; done
tar czf $O/call4.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs-*.txt rs-*.json demo 2>/dev/null
rm -rf $O/suite $O/demo
