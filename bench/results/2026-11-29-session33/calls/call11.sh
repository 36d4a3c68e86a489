#!/usr/bin/env bash
# Session 33 call 11 (one GPU): the fused activation backwards' column sums as a programmatic dependent launch
# (kernels/probes/pdl_colsum_probe.cu at this commit), timed as CUDA graph replays beside plain stream order.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 $B/pdl > $O/pdl.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/pdl.txt
