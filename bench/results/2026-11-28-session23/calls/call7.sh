#!/usr/bin/env bash
# Session 23 call 7 (one GPU): Nsight Compute on the LayerNorm backward's walk (kernels/probes/layernorm_bwd_walk_probe.cu,
# first launch of the K2 S3 walk: 2048x4096, 8B tp 4) and on the product's staged kernel at its first launch: where
# its warps stall, its memory throughput, its occupancy.
set -u
B=$(cd "$(dirname "$0")" && pwd)
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/ncu-lnbwd-walk.txt
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU" | tee -a $O/ncu-lnbwd-walk.txt
[ -n "$NCU" ] || exit 3
for k in 'walk' ; do
  timeout -k 5 150 $NCU --target-processes all -k "$k" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section SourceCounters --section WarpStateStats $B/lnbwd_walk > $O/ncu-one.txt 2>&1
  echo "== $k rc=$?" >> $O/ncu-lnbwd-walk.txt
  grep -v "^2048x\|^4096x" $O/ncu-one.txt | grep -v "^\s*$" | head -260 >> $O/ncu-lnbwd-walk.txt
done
rm -f $O/ncu-one.txt
tail -c 11000 $O/ncu-lnbwd-walk.txt
