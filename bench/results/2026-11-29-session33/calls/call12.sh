#!/usr/bin/env bash
# Session 33 call 12 (one GPU): the fused activation backwards' column sums at other block sizes
# (kernels/probes/colsum_block_probe.cu at this commit), graph replays beside the partial kernel alone.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 $B/colsumblk > $O/colsumblk.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/colsumblk.txt
