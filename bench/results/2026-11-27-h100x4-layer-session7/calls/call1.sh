#!/usr/bin/env bash
# Session 7 call 1 (4x H100) at 7836198: the bulk reduce-scatter on the copy engines (bulk:stage=1) and the layer's
# step check in the 8B demo at tp 2 (GPUs 0,1) beside BulkOps/TpLayers/Demo GPU tests (GPUs 2,3); then tp 4.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
export UB_PLAN_CACHE=off
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
demo() { # GPUS NAME ARGS...
  local g=$1 n=$2; shift 2
  CUDA_VISIBLE_DEVICES=$g timeout -k 5 150 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
mkdir -p $O/demo
(
  demo 0,1 8b-tp2-auto --tp 2 $M8 --iters 20 --config $B/auto.yaml
  demo 0,1 8b-tp2-tebulk --tp 2 $M8 --iters 20 --config $B/auto-tebulk.yaml
  demo 0,1 8b-tp2-auto-b --tp 2 $M8 --iters 20 --config $B/auto.yaml
  demo 0,1 8b-tp2-auto-trace --tp 2 $M8 --iters 20 --config $B/auto.yaml --trace $O/demo/8b-tp2-trace.json
  demo 0,1 8b-tp2-tebulk-b --tp 2 $M8 --iters 20 --config $B/auto-tebulk.yaml
) &
a=$!
(
  OUT=$O/suite STALL_S=90 timeout -k 10 300 bash $B/gpu-lanes.sh "2,3:dev\.ubuf\..*\.(BulkOps|TpLayers|Demo)GpuTest" > $O/suite.log 2>&1
  echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
b=$!
wait $a $b
OUT=$O/suite4 STALL_S=60 timeout -k 10 90 bash $B/gpu-lanes.sh "0,1,2,3:dev\.ubuf\..*\.BulkOpsGpuTest" > $O/suite4.log 2>&1
echo "suite4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
demo 0,1,2,3 8b-tp4-auto --tp 4 $M8 --iters 20 --config $B/auto.yaml
demo 0,1,2,3 8b-tp4-tebulk --tp 4 $M8 --iters 20 --config $B/auto-tebulk.yaml
if [ $((SECONDS-start)) -lt 440 ]; then
  demo 0,1,2,3 70b-tp4-auto --tp 4 $M70 --iters 20 --config $B/auto.yaml
fi
cat $O/times.txt; cat $O/suite/lanes.txt $O/suite4/lanes.txt 2>/dev/null
for f in $O/demo/*.txt; do echo "== $(basename $f)"; grep -h -E "median step|hidden share|host enqueue|MFU|step check|WARNING|Exception|AGREE" $f | head -12; done
tar czf $O/call1.tgz -C $O --exclude='junit' times.txt demo suite.log suite/lanes.txt suite/feeds.tgz suite4.log suite4/lanes.txt suite4/feeds.tgz 2>/dev/null
rm -rf $O/demo $O/suite $O/suite4
