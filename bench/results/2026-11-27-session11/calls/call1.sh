#!/usr/bin/env bash
# Session 11 call 1 (4 GPUs): fc1's bias fused into the activation (68678f3) and the demo's --clocks.
# Tests: LayerKernels (the fused kernels against the unfused bits), TpLayers + Demo (the layer with them), then
# StepGraph on ubuf's own default of 32 hardware queues (no CUDA_DEVICE_MAX_CONNECTIONS in the environment: the first
# GPU run of that default). Then the layer kernels beside PyTorch's (one round, 8B dims), and the 8B tp 4 layer with
# --cuda-graph --clocks beside PyTorch's TP layer (alternating rounds).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > $O/gpus.txt 2>&1
env | grep -E "^CUDA_DEVICE_MAX_CONNECTIONS" >> $O/gpus.txt || echo "CUDA_DEVICE_MAX_CONNECTIONS unset" >> $O/gpus.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}(TpLayers|Demo)GpuTest" "2,3:${t}LayerKernelsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/suite4 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1,2,3:${t}StepGraphGpuTest" > $O/suite4.log 2>&1
echo "suite4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0 OUT=$O/kernels ALT_BUDGET_S=60 timeout -k 10 70 bash $B/run-gpu.sh "kernels=1 --iters 30 --models 8b -- --iters 30 --models 8b" > $O/kernels.log 2>&1
echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt
UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=140 timeout -k 10 155 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt $O/suite4/lanes.txt 2>/dev/null
grep -h -E "FAILED|differ|expected" $O/suite*/*/tests.txt 2>/dev/null | head -20
grep -h -E "bias_swiglu|swiglu_bwd|bias_grad|bias_add" $O/kernels/log.txt 2>/dev/null | head -20
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round|host enqueue|SM clock|queues" $O/layer8/log.txt 2>/dev/null | head -30
tar czf $O/call1.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite4.log suite/lanes.txt suite/feeds.tgz suite4/lanes.txt suite4/feeds.tgz kernels kernels.log layer8 layer8.log 2>/dev/null
rm -rf $O/suite $O/suite4 $O/layer8 $O/kernels
