#!/usr/bin/env bash
# Session 35 call 2 (one GPU): kernels/probes/layernorm_fwd_rows_probe.cu (the LayerNorm forward's word kernel with
# R rows a block, V threads of its block a thread, W warps at compile time; every variant checked bit for bit
# against the product's word kernel), built here from the tree at acfe90e + the probe.
set -u
cd "$(dirname "$0")/.."
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 .gpu/fwdrows 2>&1 | tee $O/fwdrows.txt
