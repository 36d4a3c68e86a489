#!/usr/bin/env bash
# Session 14 call 2 (4 GPUs) at fae6d5e: scatter:serial=1 (pushes on one copy stream) and bulk:serial=1,stage=1:
# FourRankOps + BulkOps at tp 4 (their first GPU runs), bench rs at tp 4 on five shapes (serial against a stream per
# peer, in the same iterations; the ideal now counts the serial pulls), then the 8B layer at tp 4 beside PyTorch
# (auto's fc2 candidates include serial now), then StepGraph + DemoReplicas with the time left.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1,2,3:${t}(FourRankOps|BulkOps)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/rs
S="4096,1024,4096 8192,1024,4096 2048,3584,4096 4096,2048,8192 8192,3584,4096"
MS="nccl;ring:sub=2,lowp=1;scatter:lowp=1;scatter:sub=2,lowp=1;scatter:sub=4,lowp=1;scatter:lowp=1,serial=1;scatter:sub=2,lowp=1,serial=1;scatter:sub=4,lowp=1,serial=1;auto"
CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 170 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 4 --shapes $S --methods "$MS" --iters 20 --out $O/rs/rs4-serial.json > $O/rs/rs4-serial.txt 2>&1
echo "rs4-serial rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
left=$((560 - (SECONDS - start)))
if [ $left -gt 80 ]; then
  l=$(( left > 130 ? 130 : left ))
  UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=$((l - 15)) timeout -k 10 $l bash $B/run-gpu.sh "layer=1 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
  echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
left=$((570 - (SECONDS - start)))
if [ $left -gt 100 ]; then
  OUT=$O/suite2 STALL_S=90 timeout -k 10 $left bash $B/gpu-lanes.sh "0,1,2,3:${t}(StepGraph|DemoReplicas)GpuTest" > $O/suite2.log 2>&1
  echo "suite2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt $O/suite2/lanes.txt 2>/dev/null
for f in $O/suite*/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
grep -v "^\s*$" $O/rs/rs4-serial.txt 2>/dev/null | grep -vE '^\[|progress' | tail -70 | cut -c1-200
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|method: auto ran" $O/layer8/log.txt 2>/dev/null | head -20 | cut -c1-200
tar czf $O/call2.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs layer8 layer8.log suite2.log suite2/lanes.txt suite2/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/suite2 $O/rs $O/layer8 $O/*.log $O/gpus.txt $O/times.txt; ls $O
