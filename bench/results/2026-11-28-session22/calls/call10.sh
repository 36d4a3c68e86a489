#!/usr/bin/env bash
# Session 22 call 10 (1 GPU): the sum kernels after their element-wise paths were merged into one helper: the
# reduction kernel's test (strided, dense, misaligned, bias, every type pair).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite10 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0:${t}ReductionKernelGpuTest"
echo "lanes rc=$?"; cat /tmp/suite10/lanes.txt
tar czf $O/suite.tgz -C /tmp suite10
