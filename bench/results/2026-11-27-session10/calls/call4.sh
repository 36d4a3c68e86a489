#!/usr/bin/env bash
# Session 10 call 4 (4 GPUs): graph-capturable layers with 32 hardware queues. StepGraphGpuTest (ranks as processes
# with CUDA_DEVICE_MAX_CONNECTIONS=32, and the refusal without) + GraphCaptureGpuTest; the 8B tp 4 layer with
# --cuda-graph beside PyTorch's TP layer (alternating rounds, everything at 32 queues); 70B tp 4 with --cuda-graph
# again; 8B tp 4 eager at 32 queues and at the default, alternating.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0,1,2,3:${t}(StepGraph|GraphCapture)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_DEVICE_MAX_CONNECTIONS=32 UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=140 timeout -k 10 155 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
UB_TIMEOUT=20 CUDA_DEVICE_MAX_CONNECTIONS=32 demo 70b-tp4-graph-cdmc32-r2 75 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph
CUDA_DEVICE_MAX_CONNECTIONS=32 demo 8b-tp4-eager-cdmc32 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
demo 8b-tp4-eager-default 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -h -E "FAILED|ubuf_wait|differ" $O/suite/*/tests.txt 2>/dev/null | head -20
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round|host enqueue" $O/layer8/log.txt 2>/dev/null | head -30
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|host enqueue|MFU of|AGREE|ubuf_wait|timed out|abort" $f | head -8; done
tar czf $O/call4.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz layer8 layer8.log demo 2>/dev/null
rm -rf $O/demo $O/suite $O/layer8
