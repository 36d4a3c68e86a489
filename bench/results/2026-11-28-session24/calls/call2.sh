#!/usr/bin/env bash
# Session 24 call 2 (one GPU): kernels/probes/layernorm_probe.cu with the forward's register path at K = 4, 8 and 16
# groups a thread (blocks of groups / K threads, a block a row), with and without one barrier a block sum.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/ln-fwd.txt
timeout -k 5 100 $B/ln_probe 2>&1 | tee -a $OUT/ln-fwd.txt
