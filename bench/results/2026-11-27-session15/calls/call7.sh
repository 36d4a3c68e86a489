#!/usr/bin/env bash
# Session 15 call 7 (4 GPUs, the last of the device time): FourRankOps + BulkOps at 0ca21f3 (a239800's
# PlanParts.peerStreams builds scatter's pushes and the staged bulk pulls: element by element at tp 4), then issue 25's
# FP8 bar at tp 4 that call 3 (2 GPUs) could not run: 70B dims with --fp8 --cuda-graph beside bf16, then the 8B FP8
# step traced, each while time is left.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=60 timeout -k 10 110 bash $B/gpu-lanes.sh "0,1,2,3:${t}(FourRankOps|BulkOps)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
run() { # name limit args...
  local name=$1 lim=$2; shift 2
  local left=$((200 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "$name skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=30 timeout -k 10 $((left < lim ? left : lim)) bash $B/java.sh -cp "$B/lib/*" \
    dev.ubuf.cli.UbufCli demo --tp 4 --iters 20 --config $B/auto.yaml --cuda-graph "$@" --out $O/demo/$name.json \
    > $O/demo/$name.log 2>&1
  echo "$name rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run demo-70b-tp4-fp8 150 $M70 --fp8
run demo-70b-tp4-bf16 150 $M70
run demo-8b-tp4-fp8-traced 120 $M8 --fp8 --trace $O/demo/trace-8b-tp4-fp8.json
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|method: auto|AGREE|DISAGREE|Exception|rror" $f | head -12 | cut -c1-200; done
tar czf $O/call7.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/demo $O/suite $O/*.log $O/gpus.txt $O/times.txt; ls $O
