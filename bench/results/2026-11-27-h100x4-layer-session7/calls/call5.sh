#!/usr/bin/env bash
# Session 7 call 5 (4x H200 or H100) at 4996259: call 4's 70B tp 2 demo stopped after its third iteration (killed at
# 120 s, no dump). The same demo twice, side by side (GPUs 0,1 and 2,3), with UB_TIMEOUT=40 so a stuck wait names
# itself, and a watcher that takes a thread dump (SIGQUIT) of a JVM whose output stops growing for 30 s.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
export UB_PLAN_CACHE=off UB_TIMEOUT=40
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
watched() { # GPUS NAME ARGS...
  local g=$1 n=$2; shift 2
  local f=$O/demo/$n.txt
  CUDA_VISIBLE_DEVICES=$g timeout -k 5 200 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $f 2>&1 &
  local pid=$! last=-1 same=0 dumped=0
  while kill -0 $pid 2>/dev/null; do
    sleep 5
    local size=$(stat -c %s $f 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then same=$((same+5)); else same=0; last=$size; fi
    if [ $same -ge 30 ] && [ $dumped -eq 0 ]; then
      for j in $(pgrep -f "$n.json"); do [ "$(cat /proc/$j/comm 2>/dev/null)" = java ] && kill -3 $j; done
      dumped=1; echo "$n: no output for 30 s at t=$((SECONDS-start)): thread dump" >> $O/times.txt
    fi
  done
  wait $pid
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
watched 0,1 70b-tp2-a --tp 2 $M70 --iters 20 --config $B/auto.yaml &
a=$!
sleep 1
watched 2,3 70b-tp2-b --tp 2 $M70 --iters 20 --config $B/auto.yaml &
b=$!
wait $a $b
nvidia-smi -L | head -4
cat $O/times.txt
for f in $O/demo/*.txt; do echo "== $(basename $f)"; grep -h -E "median step|hidden share|MFU|step check|Exception|timed out|AGREE|iter +[0-9]" $f | grep -v INFO | tail -12; done
tar czf $O/call5.tgz -C $O times.txt demo 2>/dev/null
rm -rf $O/demo
