#!/usr/bin/env bash
# Session 33 call 9 (one GPU): the fused bias + GELU backward (the product three rows ahead since 2e211e2), its
# partial kernel alone without the column sums, and other (rows ahead, blocks an SM) pairs
# (kernels/probes/bias_gelu_bwd_ahead_probe.cu at this commit), parts by the wave rule of 9612a01.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 $B/geluahead > $O/geluahead.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/geluahead.txt
