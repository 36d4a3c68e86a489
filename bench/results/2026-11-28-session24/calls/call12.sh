#!/usr/bin/env bash
# Session 24 call 12 (2 GPUs): where the 8B tp 2 step's exposed communication is at b6c50ad: the demo (bf16, then FP8)
# with --trace (the traced overlap step and its no_comm twin, PNGs beside), 20 iterations, planning afresh.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo12
for mode in bf16 fp8; do
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 120 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $extra \
    --trace /tmp/demo12/trace-8b-tp2-$mode.json --out /tmp/demo12/8b-$mode.json > /tmp/demo12/8b-$mode.log 2>&1
  echo "demo $mode rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|MFU|breakdown|under a GEMM|hidden\)" /tmp/demo12/8b-$mode.log | head -20 | cut -c1-300
done
ls /tmp/demo12
tar czf $O/demo.tgz -C /tmp demo12
