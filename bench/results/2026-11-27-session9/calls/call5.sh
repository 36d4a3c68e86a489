#!/usr/bin/env bash
# Session 9 call 5 (4 GPUs) at e1bb58c: the step check at tp 4 (70B, UB_STEP_CHECK=1, watched for a hang), then the
# 8B tp 4 demo at CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron's setting) and unset, alternating, 2 rounds.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1 &
  local pid=$! last=-1 same=0 dumped=0 f=$O/demo/$n.txt
  while kill -0 $pid 2>/dev/null; do
    sleep 5
    local size=$(stat -c %s $f 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then same=$((same+5)); else same=0; last=$size; fi
    if [ $same -ge 25 ] && [ $dumped -eq 0 ]; then
      for j in $(pgrep -f "$n.json"); do [ "$(cat /proc/$j/comm 2>/dev/null)" = java ] && kill -3 $j; done
      dumped=1; echo "$n: no output for 25 s at t=$((SECONDS-start)): thread dump" >> $O/times.txt
    fi
  done
  wait $pid
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
UB_STEP_CHECK=1 UB_TIMEOUT=20 UB_PLAN_CACHE=off demo 70b-tp4-check 150 --tp 4 $M70 --iters 20 --config $B/auto.yaml
for r in 1 2; do
  [ $((SECONDS-start)) -gt 300 ] && break
  CUDA_DEVICE_MAX_CONNECTIONS=1 demo 8b-tp4-cdmc1-r$r 60 --tp 4 $M8 --iters 20 --config $B/auto.yaml
  demo 8b-tp4-default-r$r 60 --tp 4 $M8 --iters 20 --config $B/auto.yaml
done
cat $O/times.txt
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|MFU of|step check|abort|timed out" $f | head -10; done
tar czf $O/call5.tgz -C $O times.txt demo 2>/dev/null
rm -rf $O/demo
