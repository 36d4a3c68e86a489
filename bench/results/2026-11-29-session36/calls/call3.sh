#!/usr/bin/env bash
# Session 36 call 3 (one GPU), bundle e967061 (the atomic methods' option kernel, carried by PlanStep.AtomicGemm to
# the launcher): every one-GPU test class (the kernel and GEMM classes: AtomicGemm, Fp8Quantize,
# CublasLtGemm, Fp8Gemm, Fp8ScalePointer, Gemm, GemmTuning, StreamCandidateBench, ReductionKernel, ReportRead,
# LayerKernels; then SharedGpuOps, two ranks, a JVM each, on one GPU).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
kernels="${t}(AtomicGemm|Fp8Quantize|CublasLtGemm|Fp8Gemm|Fp8ScalePointer|Gemm|GemmTuning|StreamCandidateBench|ReductionKernel|ReportRead|LayerKernels)GpuTest"
shared="${t}SharedGpuOpsGpuTest"
OUT=/tmp/suite3 STALL_S=120 timeout -k 10 520 bash $B/gpu-lanes.sh "0:${kernels};${shared}"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite3/lanes.txt 2>/dev/null
cp /tmp/suite3/lanes.txt /tmp/suite3/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite3/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
echo "done t=$((SECONDS-start))"
