#!/usr/bin/env bash
# Session 33 call 4 (one GPU): the fused bias + activation backwards at wave-filling part lengths
# (kernels/probes/bias_act_bwd_parts_probe.cu at this commit: 32/64/128 rows and the longest parts giving k whole
# waves, SwiGLU at two blocks an SM, GELU at three).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 $B/actparts > $O/actparts.txt 2>&1; echo "probe rc=$? t=$((SECONDS-start))"
cat $O/actparts.txt
