#!/usr/bin/env bash
# Session 7 call 2 (4x H100) at 127391f: the layer and demo GPU tests again (GPUs 0,1; the test harness no longer frees
# page-locked memory between calls) beside the 8B layer at tp 2 against PyTorch (GPUs 2,3) and the 70B demo at tp 2;
# then DemoReplicasGpuTest and the 8B layer at tp 4 against PyTorch on all four.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
mkdir -p $O/demo
(
  OUT=$O/suite STALL_S=90 timeout -k 10 280 bash $B/gpu-lanes.sh "0,1:dev\.ubuf\..*\.(BulkOps|TpLayers|Demo)GpuTest" > $O/suite.log 2>&1
  echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
a=$!
(
  export PET_MASTER_PORT=29611
  CUDA_VISIBLE_DEVICES=2,3 OUT=$O/layer8 ALT_BUDGET_S=170 timeout -k 10 185 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
  echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
  CUDA_VISIBLE_DEVICES=2,3 timeout -k 5 100 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M70 --iters 20 --config $B/auto.yaml --out $O/demo/70b-tp2-auto.json > $O/demo/70b-tp2-auto.txt 2>&1
  echo "demo 70b-tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
b=$!
wait $a $b
OUT=$O/suite4 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1,2,3:dev\.ubuf\..*\.DemoReplicasGpuTest" > $O/suite4.log 2>&1
echo "suite4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((560 - (SECONDS-start)))
if [ $left -gt 60 ]; then
  OUT=$O/layer4 ALT_BUDGET_S=$((left-10)) timeout -k 10 $left bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer4.log 2>&1
  echo "layer4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/times.txt; cat $O/suite/lanes.txt $O/suite4/lanes.txt 2>/dev/null
for d in layer8 layer4; do echo "== $d"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|step check" $O/$d/log.txt 2>/dev/null | head -24; done
grep -h -E "median step|hidden share|MFU|step check|AGREE" $O/demo/70b-tp2-auto.txt | head
tar czf $O/call2.tgz -C $O --exclude='junit' times.txt demo suite.log suite/lanes.txt suite/feeds.tgz suite4.log suite4/lanes.txt suite4/feeds.tgz layer8 layer8.log layer4 layer4.log 2>/dev/null
rm -rf $O/suite $O/suite4 $O/layer8 $O/layer4 $O/demo
