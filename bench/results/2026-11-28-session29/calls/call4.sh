#!/usr/bin/env bash
# Session 29 call 4 (one GPU): Nsight Compute, with every stall reason, on the LayerNorm kernels of 8B dims at tp 4
# (2048 x 4096, bf16) as the product launches them (through kernels/probes/layernorm_warp_probe.cu, built with
# -lineinfo from 8be1305's sources): the forward's word kernel, the staged backward (its partial rows stored 512
# bytes a store) and the column sums that finish it. Where the time goes in the kernels still below 70% of copy.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU" | tee -a $O/node.txt
[ -n "$NCU" ] || exit 3
export PROBE_SHAPE=2048x4096 PROBE_REPS=2
for k in ubuf_layernorm_fwd_words_bf16 ubuf_layernorm_bwd_staged_bf16 ubuf_col_sums2_f32_to_bf16; do
  timeout -k 5 120 $NCU -k "$k" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section SourceCounters --section ComputeWorkloadAnalysis \
    --print-details all $B/ln_warp > /tmp/ncu-$k.txt 2>&1
  echo "== $k rc=$?"
  grep -v "^2048x" /tmp/ncu-$k.txt | grep -v "^\s*$" > $O/ncu-$k.txt
  grep -E "Duration|DRAM Throughput|Memory Throughput|Issued Warp Per|Eligible Warps|Active Warps Per|Stall|stall" \
    $O/ncu-$k.txt | head -40 | cut -c1-150
done
