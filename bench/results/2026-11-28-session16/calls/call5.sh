#!/usr/bin/env bash
# Session 16 call 5 (1 H100): kernels/probes/gelu_probe.cu: the product's bf16 GELU forward and backward beside
# walks of the same math with raw 16-byte words (fewer registers), one-shot grids and a prefetching loop.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
B=$(cd "$(dirname "$0")" && pwd)
CUDA_VISIBLE_DEVICES=0 timeout -k 5 120 $B/gelu_probe 2>&1 | tee $OUT/gelu-probe.txt
