#!/usr/bin/env bash
# Session 32 call 2 (one GPU), probe built here: kernels/probes/layernorm_bulk_probe.cu, the LayerNorm forward and
# the staged backward with their rows brought in by bulk copies (one per row, completion on an mbarrier), against
# the product's kernels (bundle 69b3229) and a device-to-device copy of the same bytes; outputs compared bit for bit.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/bulk > $O/bulk-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep -v "^ *$" $O/bulk-probe.txt | cut -c1-150 | head -150
