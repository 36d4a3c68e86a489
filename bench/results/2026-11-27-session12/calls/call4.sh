#!/usr/bin/env bash
# Session 12 call 4 (4 GPUs): the first-step hang, ranks as threads with UB_BUFFER_SHARING=vmm (cuMemCreate
# allocations exported and imported, as processes share them) against the default in_process sharing (plain
# allocations and peer access between the contexts), alternating, 8B tp 4 --cuda-graph, each bounded by UB_TIMEOUT=20.
# Calls 1 and 3: threads hung in 2 of 11 runs, processes (VMM sharing) in 0 of 7.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run() { # NAME LIMIT SHARING
  local n=$1 lim=$2 sh=$3
  if [ $((SECONDS - start + lim)) -gt ${BUDGET_S:-500} ]; then echo "skip $n (time)" >> $O/times.txt; return; fi
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_BUFFER_SHARING=$sh UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in $(seq 1 14); do run vmm-r$r 35 vmm; run inproc-r$r 35 in_process; done
cat $O/times.txt
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|MFU of|ubuf_wait|aborts" $f | cut -c1-160 | head -5; done
tar czf $O/call4.tgz -C $O times.txt demo 2>/dev/null
rm -rf $O/demo
