#!/usr/bin/env bash
# Session 34 call 3 (one GPU): kernels/probes/bias_swiglu_bwd_ahead_probe.cu (built here at 4adae00): the fused
# bias + SwiGLU backward at other (rows ahead, blocks an SM) pairs on the SFU math.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/swigluahead > $O/swigluahead.txt 2>&1; echo "rc=$?"; cat $O/swigluahead.txt
