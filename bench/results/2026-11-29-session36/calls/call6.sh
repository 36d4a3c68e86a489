#!/usr/bin/env bash
# Session 36 call 6 (one GPU), bundle 5c25fad (the review mend): the fp32 LayerNormMLP (GELU, SwiGLU; TE's methods,
# ub_overlap_rs_dgrad, rings, SM copies) with both ranks on one GPU, a JVM each, against float64 alone
# and the atomic RS cases with both ranks on one GPU (two methods of SharedGpuOpsGpuTest selected alone).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
console=$(ls $B/lib/junit-platform-console-standalone-*.jar | head -1)
cp=$(ls $B/lib/*.jar | grep -v console-standalone | paste -sd: -)
timeout -k 10 240 bash $B/java.sh -Dubuf.requireGpu=true -jar "$console" execute -cp "$cp" \
  --select-method 'dev.ubuf.tests.SharedGpuOpsGpuTest#layersMatchFloat64WithBothRanksOnOneGpu' \
  --select-method 'dev.ubuf.tests.SharedGpuOpsGpuTest#atomicMethodsMatchFloat64WithBothRanksOnOneGpu' \
  --details=testfeed --disable-banner > $O/tests.txt 2>&1
echo "rc=$? t=$((SECONDS-start))"
sed 's/\x1b\[[0-9;]*m//g' $O/tests.txt | grep -E "SUCCESSFUL|FAILED|ABORTED|tests (successful|failed)" | cut -c1-220 | tail -30
sed 's/\x1b\[[0-9;]*m//g' $O/tests.txt | grep -E -A12 ":: FAILED" | cut -c1-300 | head -60
