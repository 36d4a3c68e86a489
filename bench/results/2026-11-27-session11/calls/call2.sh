#!/usr/bin/env bash
# Session 11 call 2 (4 GPUs): the fused bias activations walking column tiles. LayerKernels + Demo tests (GPUs 0,1)
# beside TpLayers (GPUs 2,3); the layer kernels beside PyTorch's (one round, 8B dims, GPU 0 alone); the 8B layer at
# tp 4 and tp 2 (GPUs 0,1) with --cuda-graph beside PyTorch's TP layer; one traced 8B tp 4 step (eager); 70B tp 4
# with --cuda-graph --clocks (is the big step at the power cap?).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}(LayerKernels|Demo)GpuTest" "2,3:${t}TpLayersGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0 OUT=$O/kernels ALT_BUDGET_S=60 timeout -k 10 70 bash $B/run-gpu.sh "kernels=1 --iters 30 --models 8b -- --iters 30 --models 8b" > $O/kernels.log 2>&1
echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt
UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=120 timeout -k 10 135 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=130 timeout -k 10 145 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8tp2.log 2>&1
echo "layer8tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
demo 8b-tp4-trace 45 --tp 4 $M8 --iters 10 --config $B/auto.yaml --trace $O/demo/8b-tp4.trace.json
demo 70b-tp4-graph-clocks 75 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph --clocks
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -h -E "FAILED|differ|expected" $O/suite/*/tests.txt 2>/dev/null | head -20
grep -h -E "8b +tp (2|4) (torch_)?(bias_swiglu|swiglu|bias_grad|bias_add)" $O/kernels/log.txt 2>/dev/null | head -20
for f in $O/layer8/log.txt $O/layer8tp2/log.txt; do echo "== $f"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round " $f 2>/dev/null | head -24; done
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|host enqueue|MFU of|SM clock|AGREE|timed out|abort" $f | head -10; done
tar czf $O/call2.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz kernels kernels.log layer8 layer8.log layer8tp2 layer8tp2.log demo 2>/dev/null
rm -rf $O/suite $O/layer8 $O/layer8tp2 $O/kernels $O/demo
