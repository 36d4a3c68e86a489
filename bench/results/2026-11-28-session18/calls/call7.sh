#!/usr/bin/env bash
# Session 18 call 7 (2 GPUs): the final code (the traces' helper after b92221a): DemoGpuTest, then one traced FP8
# 8B tp 2 demo (three trace files, both comparisons).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0,1:${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 90 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 \
  --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --cuda-graph --fp8 \
  --trace $O/demo/trace-fp8.json --out $O/demo/fp8.json > $O/demo/fp8.log 2>&1
echo "demo fp8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
grep -E "median step|hidden share|^wrote|Exception|rror" $O/demo/fp8.log | cut -c1-160; ls $O/demo
tar czf $O/call7.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
