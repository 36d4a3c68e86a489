#!/usr/bin/env bash
# Session 8 call 1 (2 GPUs) at d30900d: the wgrad reads X where the forward gathered it (no backward all-gather).
# In turn on two GPUs: TpLayers + Demo GPU tests; the 8B and 70B layers at tp 2 against PyTorch (alternating rounds);
# the 70B tp 2 demo with UB_STEP_CHECK=1 under a thread-dump watcher (a rank's abort is now logged at once).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
T70="--hidden 8192 --activation swiglu --ffn 28672 --tokens 16384 --iters 20"
mkdir -p $O/demo
watched() { # GPUS NAME LIMIT ARGS...
  local g=$1 n=$2 lim=$3; shift 3
  local f=$O/demo/$n.txt
  CUDA_VISIBLE_DEVICES=$g timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $f 2>&1 &
  local pid=$! last=-1 same=0 dumped=0
  while kill -0 $pid 2>/dev/null; do
    sleep 5
    local size=$(stat -c %s $f 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then same=$((same+5)); else same=0; last=$size; fi
    if [ $same -ge 20 ] && [ $dumped -eq 0 ]; then
      for j in $(pgrep -f "$n.json"); do [ "$(cat /proc/$j/comm 2>/dev/null)" = java ] && kill -3 $j; done
      dumped=1; echo "$n: no output for 20 s at t=$((SECONDS-start)): thread dump" >> $O/times.txt
    fi
  done
  wait $pid
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
OUT=$O/suite STALL_S=90 timeout -k 10 170 bash $B/gpu-lanes.sh "0,1:dev\.ubuf\..*\.(TpLayers|Demo)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/layer8 ALT_BUDGET_S=140 timeout -k 10 155 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((575 - (SECONDS-start)))
OUT=$O/layer70 ALT_BUDGET_S=$(( left > 300 ? 170 : left - 110 )) timeout -k 10 185 bash $B/run-gpu.sh "layer=2 --tp 2 $M70 --iters 20 --config $B/auto.yaml -- $T70" > $O/layer70.log 2>&1
echo "layer70 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((580 - (SECONDS-start)))
if [ $left -gt 60 ]; then
  UB_STEP_CHECK=1 UB_TIMEOUT=20 UB_PLAN_CACHE=off watched 0,1 70b-tp2-check $((left-5)) --tp 2 $M70 --iters 20 --config $B/auto.yaml
fi
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
for d in layer8 layer70; do echo "== $d"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|step check" $O/$d/log.txt 2>/dev/null | head -24; done
grep -h -E "median step|hidden share|MFU|step check|abort|timed out|iter  *[0-9]+ " $O/demo/70b-tp2-check.txt | tail -12
tar czf $O/call1.tgz -C $O --exclude='junit' gpus.txt times.txt demo suite.log suite/lanes.txt suite/feeds.tgz layer8 layer8.log layer70 layer70.log 2>/dev/null
rm -rf $O/suite $O/layer8 $O/layer70 $O/demo
