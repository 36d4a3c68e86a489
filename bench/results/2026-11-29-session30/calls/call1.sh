#!/usr/bin/env bash
# Session 30 call 1 (one GPU): kernels/probes/layernorm_bwd_reread_probe.cu, the staged LayerNorm backward with a
# row's words re-read from shared memory after the barrier (80 registers, 3 blocks of 256 an SM) against the product.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 $B/reread > $O/reread-probe1.txt 2>&1
echo "probe rc=$?"
cut -c1-140 $O/reread-probe1.txt
