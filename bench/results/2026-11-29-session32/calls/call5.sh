#!/usr/bin/env bash
# Session 32 call 5 (one GPU), bundle of this commit: the kernels torch.matmul (torch.profiler) and ubuf (Nsight
# Compute; the tuning of call 1, and cuBLASLt's first untimed) run on the four shapes furthest above torch.matmul in
# call 1; then GEMM parity on the eight shapes that have stood above 1.02x in this or the last sessions' rounds,
# 10 alternating rounds (each side first in five), ubuf on call 1's tuning: is a shape above 1.03 a gap or a round's
# noise?
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
shapes="1024,5120,27648 2048,12288,24576 1024,7168,4096 4096,12288,18432"
timeout -k 5 60 python3 $B/names.py $shapes > $O/torch-kernels.txt 2>&1
echo "torch names rc=$? t=$((SECONDS-start))"; cut -c1-200 $O/torch-kernels.txt
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
mkdir -p /tmp/xdg5/ubuf && cp $B/xdg/ubuf/*.tsv /tmp/xdg5/ubuf/
for s in $shapes; do
  IFS=, read m k n <<< "$s"
  for mode in tuned first; do
    env=""; [ $mode = first ] && env="UB_GEMM_TUNING=0"
    env $env XDG_CACHE_HOME=/tmp/xdg5 timeout -k 5 60 $ncu --target-processes all -k regex:'nvjet|gemm|xmma|cutlass' \
      --launch-count 3 --metrics gpu__time_duration.sum bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench gemm \
      --m $m --k $k --n $n --iters 1 --warmup 1 --heat-ms 0 > /tmp/ncu5-$m-$k-$n-$mode.txt 2>&1
    echo "$s $mode rc=$? $(grep -E '^  [a-zA-Z_]' /tmp/ncu5-$m-$k-$n-$mode.txt | grep -v '==' | head -1 | cut -c1-120)" \
      | tee -a $O/ubuf-kernels.txt
  done
done
echo "t=$((SECONDS-start))"
tar czf $O/ncu.tgz -C /tmp $(cd /tmp && ls ncu5-*.txt)
PARITY_SHAPES="1024,5120,27648 2048,12288,24576 1024,7168,4096 4096,12288,18432 1024,14336,8192 8192,5120,3584 256,7168,4096 512,4096,3072" \
XDG_CACHE_HOME=/tmp/xdg5 ALT_BUDGET_S=200 timeout -k 5 210 \
  bash $B/run-gpu.sh "parity=10 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
grep -E "^round " $O/run.log | head -100
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
