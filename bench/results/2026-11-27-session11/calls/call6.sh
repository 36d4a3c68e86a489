#!/usr/bin/env bash
# Session 11 call 6 (4 GPUs, the last ~140 s of device time): the 8B tp 4 demo with --cuda-graph with its ranks as
# processes (the launcher) and as threads, alternating on one lease, each bounded by UB_TIMEOUT=20. Calls 3-5's
# first-step hangs were all with ranks as threads, every rank's host blocked inside a launch call; StepGraphGpuTest
# (ranks as processes) never hung.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run() { # NAME LIMIT launched|threads
  local n=$1 lim=$2 how=$3
  if [ $((SECONDS - start + lim)) -gt 130 ]; then echo "skip $n (time)" >> $O/times.txt; return; fi
  if [ "$how" = launched ]; then
    CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.launch.Launcher --nproc-per-node 4 dev.ubuf.cli.UbufCli demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  else
    CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  fi
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run launched-r1 40 launched
run threads-r1 35 threads
run launched-r2 40 launched
run threads-r2 35 threads
run launched-r3 40 launched
cat $O/times.txt
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "ranks:|median step overlap|hidden share|MFU of|untuned|ubuf_wait|aborts" $f | cut -c1-200 | head -8; done
tar czf $O/call6.tgz -C $O times.txt demo 2>/dev/null
rm -rf $O/demo
