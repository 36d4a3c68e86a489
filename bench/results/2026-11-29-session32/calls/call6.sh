#!/usr/bin/env bash
# Session 32 call 6 (one GPU), bundle of this commit: Nsight Compute's launch statistics and duration of the kernel
# torch.matmul runs and of ubuf's (call 1's tuning) on the two small shapes that stayed above 1.015x torch.matmul over
# call 5's ten rounds (256x7168x4096 1.031, 512x4096x3072 1.018): the same kernel, launched alike?
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
mkdir -p /tmp/xdg6/ubuf && cp $B/xdg/ubuf/*.tsv /tmp/xdg6/ubuf/
for s in 256,7168,4096 512,4096,3072; do
  IFS=, read m k n <<< "$s"
  timeout -k 5 60 $ncu -k regex:'nvjet|gemm|xmma|cutlass' --launch-skip 2 --launch-count 1 --section LaunchStats \
    --section SpeedOfLight python3 $B/names.py $s > /tmp/ncu6-$m-$k-$n-torch.txt 2>&1
  XDG_CACHE_HOME=/tmp/xdg6 timeout -k 5 60 $ncu --target-processes all -k regex:'nvjet|gemm|xmma|cutlass' \
    --launch-skip 1 --launch-count 1 --section LaunchStats --section SpeedOfLight bash $B/java.sh -cp "$B/lib/*" \
    dev.ubuf.cli.UbufCli bench gemm --m $m --k $k --n $n --iters 1 --warmup 1 --heat-ms 0 > /tmp/ncu6-$m-$k-$n-ubuf.txt 2>&1
  for side in torch ubuf; do
    echo "== $s $side"; grep -E "nvjet|gemm|Duration|Grid Size|Block Size|Cluster|Shared Memory|Registers|Waves|SM Frequency|DRAM Throughput|Memory Throughput" \
      /tmp/ncu6-$m-$k-$n-$side.txt | grep -v PROF | cut -c1-110
  done
done
echo "t=$((SECONDS-start))"
tar czf $O/ncu.tgz -C /tmp $(cd /tmp && ls ncu6-*.txt)
