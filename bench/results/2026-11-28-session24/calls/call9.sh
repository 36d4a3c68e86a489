#!/usr/bin/env bash
# Session 24 call 9 (one GPU): kernels/probes/gelu_probe.cu with the GELU backward one-shot as PyTorch walks it
# (V words a thread, a block's words consecutive), streaming cache hints, and a tanh from the fast exponential, beside
# the product's dense kernel as LayerKernels launches it: GELU's backward runs at 1.01x PyTorch's time.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/gelu.txt
timeout -k 5 100 $B/gelu_probe 2>&1 | tee -a $OUT/gelu.txt
