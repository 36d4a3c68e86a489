#!/usr/bin/env bash
# Session 32 call 12 (one GPU), probe built here: kernels/probes/bias_act_bwd_parts_probe.cu, the fused bias + SwiGLU
# backward and its bias gradient's column sums at parts of 32 (the product's at 8192 rows), 64 and 128 rows, at the
# layer's three SwiGLU widths (F = 3584, 7168, 14336; 8192 rows); then the biased GELU backward over F columns at
# the same parts (its first timing), against copies of the same bytes.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/actparts > $O/actparts-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
cut -c1-130 $O/actparts-probe.txt
