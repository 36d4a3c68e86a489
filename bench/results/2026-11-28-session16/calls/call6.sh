#!/usr/bin/env bash
# Session 16 call 6 (1 H100): 9791492's one-shot GELU grid: LayerKernelsGpuTest (every GELU case against the host
# reference), then bench kernels' gelu_fwd and gelu_bwd beside PyTorch's, 3 alternating rounds.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=60 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/kernels
CUDA_VISIBLE_DEVICES=0 OUT=$O/kernels ALT_BUDGET_S=150 timeout -k 10 160 bash $B/run-gpu.sh \
  "kernels=3 --iters 30 --kernels gelu_fwd,gelu_bwd -- --iters 30 --kernels gelu_fwd,gelu_bwd" > $O/kernels.log 2>&1
echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
tail -5 $O/kernels.log | cut -c1-200
tar czf $O/call6.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz kernels kernels.log 2>/dev/null
rm -rf $O/suite $O/kernels $O/*.log $O/gpus.txt $O/times.txt; ls $O
