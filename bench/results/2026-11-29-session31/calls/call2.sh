#!/usr/bin/env bash
# Session 31 call 2 (one GPU): kernels/probes/layernorm_bwd_lean_probe.cu (the staged LayerNorm backward with the
# warp totals read four at a time, the next row's statistics a row ahead, cheaper copy issue) against the product;
# then which kernels torch.matmul (torch.profiler) and ubuf (Nsight Compute: the tuned choice from session 30's cache,
# and cuBLASLt's first with UB_GEMM_TUNING=0) run on the five shapes furthest above torch.matmul in call 1.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 150 $B/lean > $O/lean-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep "OP \|memcpy\|differing" $O/lean-probe.txt | cut -c1-130
shapes="2048,2048,4096 16384,13824,5120 16384,8192,5120 2048,2560,5120 256,2048,4096"
timeout -k 5 60 python3 $B/names.py $shapes > $O/torch-kernels.txt 2>&1
echo "torch names rc=$? t=$((SECONDS-start))"; cut -c1-200 $O/torch-kernels.txt
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
mkdir -p /tmp/xdg2 && cp -r $B/xdg/ubuf /tmp/xdg2/
for s in $shapes; do
  IFS=, read m k n <<< "$s"
  for mode in tuned first; do
    env=""; [ $mode = first ] && env="UB_GEMM_TUNING=0"
    env $env XDG_CACHE_HOME=/tmp/xdg2 timeout -k 5 60 $ncu --target-processes all -k regex:'nvjet|gemm|xmma|cutlass' \
      --launch-count 3 --metrics gpu__time_duration.sum bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench gemm \
      --m $m --k $k --n $n --iters 1 --warmup 1 --heat-ms 0 > /tmp/ncu-$m-$k-$n-$mode.txt 2>&1
    echo "$s $mode rc=$? $(grep -E '^  [a-zA-Z_]' /tmp/ncu-$m-$k-$n-$mode.txt | grep -v '==' | head -1 | cut -c1-120)" \
      | tee -a $O/ubuf-kernels.txt
  done
done
echo "t=$((SECONDS-start))"
tar czf $O/ncu.tgz -C /tmp $(cd /tmp && ls ncu-*.txt)
