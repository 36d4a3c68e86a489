#!/usr/bin/env bash
# Session 8 call 3 (2 GPUs) at 9b99fcc: the RS benchmark's staged communication term on two shapes; the GPU tests of
# the final code (BulkOps + TpLayers + Demo on two GPUs, LayerKernels on one).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
timeout -k 5 150 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --bias --shapes 8192,7168,4096 16384,14336,8192 4096,4096,8192 --methods "auto;ring:sub=4,lowp=1;pipeline" --iters 20 --out $O/rs.json > $O/rs.txt 2>&1
echo "rs rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/suite STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0,1:dev\.ubuf\..*\.(BulkOps|TpLayers|Demo)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/ktests STALL_S=60 timeout -k 5 120 bash $B/gpu-lanes.sh "0:dev\.ubuf\..*\.LayerKernelsGpuTest" > $O/ktests.log 2>&1
echo "ktests rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt $O/ktests/lanes.txt 2>/dev/null
grep -E "comm |% of ideal|FAULT" $O/rs.txt | head -20
tar czf $O/call3.tgz -C $O --exclude='junit' gpus.txt times.txt rs.txt rs.json suite.log suite/lanes.txt suite/feeds.tgz ktests.log ktests/lanes.txt ktests/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/ktests
