#!/usr/bin/env bash
# Session 11 call 3 (4 GPUs): the step writing its gradients (GradientMode.OVERWRITE, no zeroing in the SGD pass).
# Tests: TpLayers + Demo (GPUs 0,1) beside LayerKernels (GPUs 2,3), then StepGraph + DemoReplicas on all four. The
# 8B layer at tp 4 and tp 2 (GPUs 0,1) with --cuda-graph beside PyTorch's TP layer; 70B at tp 4 with --cuda-graph
# beside PyTorch's (one round each), and 70B at tp 2 (GPUs 0,1) with --cuda-graph, alone.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
T70="--hidden 8192 --activation swiglu --ffn 28672 --tokens 16384 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 130 bash $B/gpu-lanes.sh "0,1:${t}(TpLayers|Demo)GpuTest" "2,3:${t}LayerKernelsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/suite4 STALL_S=90 timeout -k 10 130 bash $B/gpu-lanes.sh "0,1,2,3:${t}(StepGraph|DemoReplicas)GpuTest" > $O/suite4.log 2>&1
echo "suite4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=110 timeout -k 10 125 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=110 timeout -k 10 125 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8tp2.log 2>&1
echo "layer8tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
UB_TIMEOUT=30 OUT=$O/layer70 ALT_BUDGET_S=100 timeout -k 10 115 bash $B/run-gpu.sh "layer=1 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph -- $T70" > $O/layer70.log 2>&1
echo "layer70 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=30 timeout -k 5 90 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M70 --iters 20 --config $B/auto.yaml --cuda-graph --out $O/demo/70b-tp2-graph.json > $O/demo/70b-tp2-graph.txt 2>&1
echo "demo 70b-tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt $O/suite4/lanes.txt 2>/dev/null
grep -h -E "FAILED|differ|expected" $O/suite*/*/tests.txt 2>/dev/null | head -20
for f in $O/layer8/log.txt $O/layer8tp2/log.txt $O/layer70/log.txt $O/demo/70b-tp2-graph.txt; do echo "== $f"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round |AGREE" $f 2>/dev/null | head -24; done
tar czf $O/call3.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite4.log suite/lanes.txt suite/feeds.tgz suite4/lanes.txt suite4/feeds.tgz layer8 layer8.log layer8tp2 layer8tp2.log layer70 layer70.log demo 2>/dev/null
rm -rf $O/suite $O/suite4 $O/layer8 $O/layer8tp2 $O/layer70 $O/demo
