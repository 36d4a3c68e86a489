#!/usr/bin/env bash
# Session 16 call 4 (1 H100): GEMM parity on session 15's retuned choices (call5-0ca21f3-h100's tuning file, copied):
# first a second retune of the four shapes that stayed above 1.03x torch.matmul in session 15's call 6 (one
# alternating round, writing into the copy), then three alternating rounds of every sweep GEMM on the copy.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/retune $O/rounds && cp $B/gemm-tuning-retuned.properties $O/gemm-tuning.properties
export UB_GEMM_TUNING_FILE=$O/gemm-tuning.properties
CUDA_VISIBLE_DEVICES=0 PARITY_SHAPES="1024,5120,27648 4096,12288,24576 512,7168,4096 512,2048,4096" OUT=$O/retune \
  ALT_BUDGET_S=110 timeout -k 10 120 bash $B/run-gpu.sh "parity=1 --iters 30 --heat-ms 300 --retune -- --iters 30 --heat-ms 300" \
  > $O/retune.log 2>&1
echo "retune rc=$? t=$((SECONDS-start))" >> $O/times.txt
cp $O/gemm-tuning.properties $O/retune/gemm-tuning-after-retune.properties
left=$((520 - (SECONDS - start)))
CUDA_VISIBLE_DEVICES=0 OUT=$O/rounds ALT_BUDGET_S=$left timeout -k 10 $((left + 10)) bash $B/run-gpu.sh \
  "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
echo "parity rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; grep -h "retuned" $O/retune.log $O/retune/parity/*.txt 2>/dev/null | head -8 | cut -c1-200
tail -4 $O/retune.log | cut -c1-200; tail -4 $O/parity.log | cut -c1-200
tar czf $O/call4.tgz -C $O gpus.txt times.txt retune rounds retune.log parity.log gemm-tuning.properties 2>/dev/null
rm -rf $O/retune $O/rounds $O/*.log $O/gpus.txt $O/times.txt $O/gemm-tuning.properties; ls $O
