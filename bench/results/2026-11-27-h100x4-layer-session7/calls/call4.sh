#!/usr/bin/env bash
# Session 7 call 4 (4x H100) at 4996259: the step check after its refactor (maximum over ranks once at the end,
# OpTable.discard through a Closer): the 8B and 70B demos at tp 2 with the planner measuring (GPUs 0,1), beside the
# layer and bulk GPU tests (GPUs 2,3).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
export UB_PLAN_CACHE=off
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
demo() { # GPUS NAME ARGS...
  local g=$1 n=$2; shift 2
  CUDA_VISIBLE_DEVICES=$g timeout -k 5 120 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
mkdir -p $O/demo
(
  demo 0,1 8b-tp2-auto --tp 2 $M8 --iters 20 --config $B/auto.yaml
  demo 0,1 70b-tp2-auto --tp 2 $M70 --iters 20 --config $B/auto.yaml
) &
a=$!
(
  OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "2,3:dev\.ubuf\..*\.(BulkOps|TpLayers)GpuTest" > $O/suite.log 2>&1
  echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
b=$!
wait $a $b
cat $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
for f in $O/demo/*.txt; do echo "== $(basename $f)"; grep -h -E "median step|hidden share|MFU|step check|Exception|AGREE" $f | grep -v INFO | head -10; done
tar czf $O/call4.tgz -C $O --exclude='junit' times.txt demo suite.log suite/lanes.txt suite/feeds.tgz 2>/dev/null
rm -rf $O/demo $O/suite
