#!/usr/bin/env bash
# Session 16 call 1 (4 GPUs): the first GPU run of b9abfd8's FP8 byte transpose and 759d7f0's HostTensors transfers:
# Fp8Quantize (the transpose's 8 cases) and LayerKernels beside TpLayers and Demo (the FP8 layers through it), then
# StepGraph on all four; then the 8B tp 4 demo with --fp8 --cuda-graph beside bf16 (expect the FP8 step ~0.25 ms
# shorter than call 1 of session 15), then bench kernels' fp8_transpose beside PyTorch on GPU 0.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 300 bash $B/gpu-lanes.sh "0,1:${t}(TpLayers|Demo)GpuTest" \
  "2,3:${t}(Fp8Quantize|LayerKernels)GpuTest" "0,1,2,3:${t}StepGraphGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
for mode in fp8 bf16; do
  left=$((470 - (SECONDS - start)))
  [ $left -lt 50 ] && { echo "demo $mode skipped, $left s left" >> $O/times.txt; continue; }
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph $extra --out $O/demo/demo-8b-tp4-$mode.json > $O/demo/demo-8b-tp4-$mode.log 2>&1
  echo "demo $mode rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
left=$((560 - (SECONDS - start)))
if [ $left -gt 40 ]; then
  mkdir -p $O/kernels
  CUDA_VISIBLE_DEVICES=0 OUT=$O/kernels ALT_BUDGET_S=$((left - 15)) timeout -k 10 $((left - 5)) bash $B/run-gpu.sh \
    "kernels=3 --iters 30 --kernels fp8_transpose -- --iters 30 --kernels fp8_transpose" > $O/kernels.log 2>&1
  echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|host enqueue|method: auto|Exception|rror" $f | head -14 | cut -c1-220; done
tail -5 $O/kernels.log 2>/dev/null | cut -c1-200
tar czf $O/call1.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo kernels kernels.log 2>/dev/null
rm -rf $O/suite $O/demo $O/kernels $O/*.log $O/gpus.txt $O/times.txt; ls $O
