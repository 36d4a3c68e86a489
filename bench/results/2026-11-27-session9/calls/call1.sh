#!/usr/bin/env bash
# Session 9 call 1 (4 GPUs) at 00824f7: the eighth session's SGD GPU case and the layer at tp 4, never run since
# the backward's all-gather went (d30900d) and the RS bias moved into its last reduction (1f276ee).
# Tests in two lanes (LayerKernels + Demo on GPUs 0,1; TpLayers + BulkOps on 2,3); then the 8B and the 70B layer at
# tp 4 against PyTorch's TP layer (alternating rounds) on all four GPUs.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
T70="--hidden 8192 --activation swiglu --ffn 28672 --tokens 16384 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}(LayerKernels|Demo)GpuTest" "2,3:${t}(TpLayers|BulkOps)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/layer8 ALT_BUDGET_S=140 timeout -k 10 155 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((575 - (SECONDS-start)))
OUT=$O/layer70 ALT_BUDGET_S=$((left-20)) timeout -k 10 $((left-5)) bash $B/run-gpu.sh "layer=2 --tp 4 $M70 --iters 20 --config $B/auto.yaml -- $T70" > $O/layer70.log 2>&1
echo "layer70 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
for d in layer8 layer70; do echo "== $d"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round" $O/$d/log.txt 2>/dev/null | head -30; done
tar czf $O/call1.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz layer8 layer8.log layer70 layer70.log 2>/dev/null
rm -rf $O/suite $O/layer8 $O/layer70
