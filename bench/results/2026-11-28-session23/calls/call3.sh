#!/usr/bin/env bash
# Session 23 call 3 (one GPU): kernels/probes/layernorm_bwd_walk_probe.cu (where the LayerNorm backward's time goes).
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/lnbwd-walk.txt
timeout -k 5 200 $B/lnbwd_walk 2>&1 | tee -a $OUT/lnbwd-walk.txt
