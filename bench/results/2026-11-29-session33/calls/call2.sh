#!/usr/bin/env bash
# Session 33 call 2 (one GPU): the biased GELU probe's second version (kernels/probes/bias_gelu_probe.cu at this
# commit): the forward at full occupancy (a word a thread, two words a thread, column-stationary threads) and the
# fused backward at 3 and 4 blocks an SM, beside the product and the unbiased GELU.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 150 $B/biasgelu > $O/biasgelu.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/biasgelu.txt
