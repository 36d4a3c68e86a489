#!/usr/bin/env bash
# Session 29 call 5 (one GPU): kernels/probes/layernorm_warp_probe.cu with the staged backward's row sums in two
# chains a thread (one per column group; other bits), against the same walk with one chain, A B A B.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
timeout -k 5 150 $B/ln_warp > $O/ln-warp-probe5.txt 2>&1
echo "probe rc=$?"
grep -E "bwd .*(by shuffles|product staged|OP: product)" $O/ln-warp-probe5.txt | cut -c1-130
