#!/usr/bin/env bash
# Session 8 call 5 (2 GPUs) at 872d19d: the final code's GPU tests (LayerKernels, TpLayers, Demo); one traced 8B tp 2
# step (the SGD step's span); the 8B and 70B layers at tp 2 against PyTorch (alternating rounds).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
T70="--hidden 8192 --activation swiglu --ffn 28672 --tokens 16384 --iters 20"
OUT=$O/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:dev\.ubuf\..*\.(LayerKernels|TpLayers|Demo)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
timeout -k 5 90 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --trace $O/demo/8b-tp2-trace.json --out $O/demo/8b-tp2-trace-run.json > $O/demo/8b-tp2-trace.txt 2>&1
echo "demo trace rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/layer8 ALT_BUDGET_S=150 timeout -k 10 165 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((570 - (SECONDS-start)))
OUT=$O/layer70 ALT_BUDGET_S=$(( left - 15 )) timeout -k 10 $left bash $B/run-gpu.sh "layer=2 --tp 2 $M70 --iters 20 --config $B/auto.yaml -- $T70" > $O/layer70.log 2>&1
echo "layer70 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -E "sgd|step [0-9]+ us|host:" $O/demo/8b-tp2-trace.txt | head -8
for d in layer8 layer70; do echo "== $d"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of" $O/$d/log.txt 2>/dev/null | head -24; done
tar czf $O/call5.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz demo layer8 layer8.log layer70 layer70.log 2>/dev/null
rm -rf $O/suite $O/demo $O/layer8 $O/layer70
