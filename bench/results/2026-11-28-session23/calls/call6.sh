#!/usr/bin/env bash
# Session 23 call 6 (one GPU): kernels/probes/layernorm_bwd_walk_probe.cu again, with the walk's row sums behind one
# barrier (two scratch buffers by row parity) and the column sums with sixteen loads in flight a warp.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/lnbwd-walk2.txt
timeout -k 5 200 $B/lnbwd_walk 2>&1 | tee -a $OUT/lnbwd-walk2.txt
