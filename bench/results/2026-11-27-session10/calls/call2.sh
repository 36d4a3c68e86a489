#!/usr/bin/env bash
# Session 10 call 2 (4 GPUs) at 44b6da0: every ubuf kernel loaded with its module (call 1's first-launch deadlock).
# StepGraphGpuTest + GraphCaptureGpuTest on all four GPUs; then the demo with --cuda-graph and eager, alternating,
# 8B tp 4 twice each and 70B tp 4 (graph twice, eager once). Graph runs with UB_TIMEOUT=20: a wait kernel that
# never sees its flag traps after 20 s and prints the flag, what it held and what it needed.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1,2,3:${t}(StepGraph|GraphCapture)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
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
for r in 1 2; do
  UB_TIMEOUT=20 demo 8b-tp4-graph-r$r 50 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph
  demo 8b-tp4-eager-r$r 45 --tp 4 $M8 --iters 20 --config $B/auto.yaml
done
UB_TIMEOUT=20 demo 70b-tp4-graph-r1 70 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph
demo 70b-tp4-eager-r1 70 --tp 4 $M70 --iters 20 --config $B/auto.yaml
[ $((SECONDS-start)) -lt 480 ] && UB_TIMEOUT=20 demo 70b-tp4-graph-r2 70 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -h -E "FAILED|ubuf_wait|differ" $O/suite/*/tests.txt 2>/dev/null | head -20
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|hidden share|host enqueue|MFU of|AGREE|ubuf_wait|timed out|abort|Exception" $f | head -10; done
tar czf $O/call2.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/demo $O/suite
