#!/usr/bin/env bash
# Session 32 call 3 (one GPU), probe built here: kernels/probes/layernorm_bulk_probe.cu with the staged backward at
# other block shapes (K column groups a thread, launch bounds): K = 2 at 80 registers (3 blocks an SM) on the
# product's parts and on shorter ones, K = 1 (512 threads a 4096-column row) at 64 and 90 registers; the forward's
# fenced bulk variant beside the product again. Bundle 69b3229 otherwise.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/bulk > $O/bulk-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep -E "memcpy|product|BWD|FWD" $O/bulk-probe.txt | grep -v "differing 0" | cut -c1-150 | head -150
