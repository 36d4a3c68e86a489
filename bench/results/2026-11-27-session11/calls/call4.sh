#!/usr/bin/env bash
# Session 11 call 4 (4 GPUs): both gradient modes tuned at initialisation (no untuned GEMM in a step). The 8B tp 4
# layer with --cuda-graph beside PyTorch's (2 rounds), then the same demo alone 6 more times (with --clocks on 2),
# each bounded by UB_TIMEOUT=20 (a device wait traps after 20 s), to count first-step hangs like call 3's.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=120 timeout -k 10 135 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2 3 4; do demo 8b-tp4-graph-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph; done
for r in 1 2; do demo 8b-tp4-graph-clocks-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks; done
cat $O/gpus.txt $O/times.txt
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round |untuned" $O/layer8/log.txt 2>/dev/null | head -24
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step overlap|hidden share|MFU of|SM clock|untuned|ubuf_wait|aborts" $f | cut -c1-240 | head -8; done
tar czf $O/call4.tgz -C $O gpus.txt times.txt layer8 layer8.log demo 2>/dev/null
rm -rf $O/layer8 $O/demo
