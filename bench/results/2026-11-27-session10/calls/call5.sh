#!/usr/bin/env bash
# Session 10 call 5 (4 GPUs) at d6507d2: the 8B tp 2 layer with --cuda-graph beside PyTorch (GPUs 0,1, alternating
# rounds, 32 hardware queues), then eager steps at 32 queues and at the driver's default, alternating (8B and 70B,
# tp 4): does the eager path want 32 queues too?
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
CUDA_VISIBLE_DEVICES=0,1 CUDA_DEVICE_MAX_CONNECTIONS=32 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=110 timeout -k 10 125 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8tp2.log 2>&1
echo "layer8tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2; do
  demo 8b-tp4-eager-default-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
  CUDA_DEVICE_MAX_CONNECTIONS=32 demo 8b-tp4-eager-cdmc32-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
done
CUDA_DEVICE_MAX_CONNECTIONS=32 demo 70b-tp4-eager-cdmc32 60 --tp 4 $M70 --iters 20 --config $B/auto.yaml
[ $((SECONDS-start)) -lt 330 ] && demo 70b-tp4-eager-default 60 --tp 4 $M70 --iters 20 --config $B/auto.yaml
cat $O/gpus.txt $O/times.txt
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round" $O/layer8tp2/log.txt 2>/dev/null | head -30
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|host enqueue|MFU of|AGREE|timed out|abort" $f | head -8; done
tar czf $O/call5.tgz -C $O gpus.txt times.txt layer8tp2 layer8tp2.log demo 2>/dev/null
rm -rf $O/demo $O/layer8tp2
