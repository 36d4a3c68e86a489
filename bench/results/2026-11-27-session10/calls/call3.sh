#!/usr/bin/env bash
# Session 10 call 3 (4 GPUs) at 44b6da0: why graph-safe ops deadlock. A small TE-default demo at tp 2 (the
# StepGraphGpuTest case that fails at its first eager call), with --cuda-graph under: the defaults,
# CUDA_DEVICE_MAX_CONNECTIONS=32, CUDA_MODULE_LOADING=EAGER, and without --cuda-graph (memop signalling) as the
# control; then the 70B tp 4 graph run (whose replays deadlocked in call 2) with 32 connections, and 8B with 32.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
S="--tp 2 --hidden 256 --ffn 512 --tokens 512 --swiglu --iters 3 --warmup 1"
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=${GPUS:-0,1,2,3} timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
export UB_TIMEOUT=10
GPUS=0,1 demo small-memop 40 $S &
GPUS=2,3 demo small-graph 40 $S --cuda-graph &
wait
GPUS=0,1 CUDA_DEVICE_MAX_CONNECTIONS=32 demo small-graph-cdmc32 40 $S --cuda-graph &
GPUS=2,3 CUDA_MODULE_LOADING=EAGER demo small-graph-eagerload 40 $S --cuda-graph &
wait
GPUS=0,1 demo small-graph-r2 40 $S --cuda-graph &
GPUS=2,3 CUDA_DEVICE_MAX_CONNECTIONS=32 demo small-graph-cdmc32-r2 40 $S --cuda-graph &
wait
UB_TIMEOUT=20 CUDA_DEVICE_MAX_CONNECTIONS=32 demo 70b-tp4-graph-cdmc32 75 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph
UB_TIMEOUT=20 CUDA_DEVICE_MAX_CONNECTIONS=32 demo 8b-tp4-graph-cdmc32 50 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph
[ $((SECONDS-start)) -lt 420 ] && UB_TIMEOUT=20 CUDA_MODULE_LOADING=EAGER demo 70b-tp4-graph-eagerload 75 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph
cat $O/times.txt
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|host enqueue|AGREE|ubuf_wait|timed out|abort" $f | head -8; done
tar czf $O/call3.tgz -C $O times.txt demo 2>/dev/null
rm -rf $O/demo
