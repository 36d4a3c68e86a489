#!/usr/bin/env bash
# Session 24 call 5 (one GPU): kernels/probes/layernorm_probe.cu with the product's word kernel (ae065b4) beside
# copies of it with its choices undone one at a time (two-barrier block sums, 64-bit indices, a constant 0 for
# "one"), launch bounds (512, 2) against (1024, 1) on both, and the second call's "regrow K4": `bench kernels` timed the word
# it replaced, where the probe had timed "regrow K4" 10-16% faster.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/ln-fwd3.txt
timeout -k 5 100 $B/ln_probe 2>&1 | tee -a $OUT/ln-fwd3.txt
