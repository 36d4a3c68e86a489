#!/usr/bin/env bash
# Session 24 call 7 (one GPU): kernels/probes/layernorm_probe.cu with the product's word kernel (fe26954) beside copies
# that load gamma's and beta's words with the row or before the second block sum, and at 8 groups a thread.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/ln-fwd4.txt
timeout -k 5 100 $B/ln_probe 2>&1 | tee -a $OUT/ln-fwd4.txt
