#!/usr/bin/env bash
# Session 15 call 1 (4 GPUs): the collective-close class after HostTensors' one-copy download, Watchdog and
# VmmUserBufferProcess beside Fp8Quantize (the device step count); then StepGraph (the first GPU run of FP8 steps as
# CUDA graphs) on all four; then the 8B tp 4 demo with --fp8 --cuda-graph beside bf16 (issue 25's FP8 bar).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 330 bash $B/gpu-lanes.sh "0,1:${t}(CollectiveClose|Watchdog|VmmUserBufferProcess)GpuTest" \
  "2,3:${t}Fp8QuantizeGpuTest" "0,1,2,3:${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
for mode in fp8 bf16; do
  left=$((560 - (SECONDS - start)))
  [ $left -lt 60 ] && { echo "demo $mode skipped, $left s left" >> $O/times.txt; continue; }
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 10 $((left < 110 ? left : 110)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph $extra --out $O/demo/demo-8b-tp4-$mode.json > $O/demo/demo-8b-tp4-$mode.log 2>&1
  echo "demo $mode rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
grep -h "CollectiveClose .*every phase" $O/suite/*/tests.txt 2>/dev/null | cut -c1-300
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|host enqueue|method: auto|AGREE|DISAGREE|Exception|error" $f | head -14 | cut -c1-220; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/*.log $O/gpus.txt $O/times.txt; ls $O
