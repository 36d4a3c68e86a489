#!/usr/bin/env bash
# Session 13 call 2 (4 GPUs) at 7e9b3a4: the suite parts call 1's timeout cut (the buffer-sharing tests, the GEMM
# and kernel tests, then the four-GPU lane: FourRankOps, StepGraph, DemoReplicas); then the 8B layer at tp 4 beside
# PyTorch's (--cuda-graph, ranks as threads, now with VMM sharing as the automatic choice and scatter:lowp=1 for a
# ring_exchange reduce-scatter), two alternating rounds.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 390 bash $B/gpu-lanes.sh \
  "0,1:${t}(UserBuffer|VmmUserBuffer|ProcessMode|Vmm)GpuTest" \
  "2,3:${t}(Fp8Quantize|CublasLtGemm|Fp8Gemm|Fp8ScalePointer|Gemm|GemmTuning|ReductionKernel|ReportRead|LayerKernels)GpuTest" \
  "0,1,2,3:${t}(FourRankOps|StepGraph|DemoReplicas)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
left=$((575 - (SECONDS - start)))
if [ $left -gt 80 ]; then
  UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=$((left - 15)) timeout -k 10 $left bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
  echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round|method: auto ran" $O/layer8/log.txt 2>/dev/null | head -40 | cut -c1-200
tar czf $O/call2.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz layer8 layer8.log 2>/dev/null
rm -rf $O/suite $O/layer8
