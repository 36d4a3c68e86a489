#!/usr/bin/env bash
# Session 14 call 1 (4 GPUs) at 6faf16d: bench pushes at tp 4 (copy engines vs SM copies vs NCCL's reduce-scatter,
# every rank sending to every peer at once), then gpu-lanes.sh 2 (memory, kernels incl. AtomicGemm, batched
# SharedGpuOps, the 4-GPU lane): the first GPU runs of both.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/pushes
CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 10 100 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench pushes --tp 4 --out $O/pushes/pushes-tp4.json > $O/pushes.log 2>&1
echo "pushes rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((570 - (SECONDS - start)))
OUT=$O/suite STALL_S=90 timeout -k 10 $left bash $B/gpu-lanes.sh 2 > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; tail -40 $O/pushes.log | cut -c1-220
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 "✘" $f | head -12 | cut -c1-250; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt pushes pushes.log suite.log suite/lanes.txt suite/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/pushes $O/*.log $O/gpus.txt $O/times.txt; ls $O
