#!/usr/bin/env bash
# Session 13 call 3 (4 GPUs) at 7e9b3a4: the layer beside PyTorch's at the new defaults (VMM sharing for threads,
# scatter:lowp=1 for ring_exchange RS; --cuda-graph): 8B tp 2 (two rounds), 70B tp 4 and 70B tp 2 (one round each);
# then, with the time left, the first FP8 sweep at tp 4 (Llama-3-8B and 70B shapes, ubuf's rounds alone).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
T70="--hidden 8192 --activation swiglu --ffn 28672 --tokens 16384 --iters 20"
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=110 timeout -k 10 125 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8tp2.log 2>&1
echo "layer8tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
UB_TIMEOUT=30 OUT=$O/layer70 ALT_BUDGET_S=100 timeout -k 10 115 bash $B/run-gpu.sh "layer=1 --tp 4 $M70 --iters 20 --config $B/auto.yaml --cuda-graph -- $T70" > $O/layer70.log 2>&1
echo "layer70 rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=30 OUT=$O/layer70tp2 ALT_BUDGET_S=100 timeout -k 10 115 bash $B/run-gpu.sh "layer=1 --tp 2 $M70 --iters 20 --config $B/auto.yaml --cuda-graph -- $T70" > $O/layer70tp2.log 2>&1
echo "layer70tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
left=$((565 - (SECONDS - start)))
if [ $left -gt 120 ]; then
  (cd $O && SWEEP_MODELS=llama3-8b,llama3-70b ALT_BUDGET_S=$left timeout -k 10 $((left + 10)) bash $B/sweep-calls.sh tp4 fp8 > $O/sweep-fp8.log 2>&1)
  echo "sweep tp4 fp8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt
for f in $O/layer8tp2/log.txt $O/layer70/log.txt $O/layer70tp2/log.txt; do echo "== $f"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round |method: auto ran" $f 2>/dev/null | head -30 | cut -c1-200; done
tail -30 $O/sweep-tp4-fp8-summary.txt 2>/dev/null | cut -c1-200
tar czf $O/call3.tgz -C $O gpus.txt times.txt layer8tp2 layer8tp2.log layer70 layer70.log layer70tp2 layer70tp2.log sweep-fp8.log 2>/dev/null
rm -rf $O/layer8tp2 $O/layer70 $O/layer70tp2 $O/sweep-work $O/*.log $O/gpus.txt $O/times.txt; ls $O
