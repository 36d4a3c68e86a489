#!/usr/bin/env bash
# Session 11 call 5 (4 GPUs): OVERWRITE reverted (2ea146c, 7073542): the trainer zeroes its gradients in the SGD
# pass again, as in calls 1 and 2 (no first-step hang in their 8 runs). The 8B tp 4 demo with --cuda-graph 5 times
# and eager once, each bounded by UB_TIMEOUT=20: do calls 3 and 4's first-step hangs (6 of 9 runs) go with it?
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2 3 4 5; do demo 8b-tp4-graph-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph; done
demo 8b-tp4-eager 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|MFU of|untuned|ubuf_wait|aborts" $f | cut -c1-200 | head -8; done
tar czf $O/call5.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo
