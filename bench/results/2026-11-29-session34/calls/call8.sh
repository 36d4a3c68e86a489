#!/usr/bin/env bash
# Session 34 call 8 (one GPU), bundle 00e3071 (the session's last kernels): `bench kernels` (every layer kernel)
# with 6517427's kernels jar first on the class path (old) and this bundle's (new), A B B A; then the one-GPU test
# classes: the kernel and GEMM classes (AtomicGemm, Fp8Quantize, CublasLtGemm, Fp8Gemm, Fp8ScalePointer, Gemm,
# GemmTuning, StreamCandidateBench, ReductionKernel, ReportRead, LayerKernels), then SharedGpuOps (two ranks, a JVM
# each, on one GPU).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/ab8
i=0
for side in old new new old; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-6517427.jar:$B/lib/*"
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 \
    --out /tmp/ab8/$i-$side.json > /tmp/ab8/$i-$side.log 2>&1
  echo "$i $side rc=$? t=$((SECONDS-start))"
  grep -E "tp 4" /tmp/ab8/$i-$side.log | grep -E "8b.*(layernorm|bias_swiglu_bwd|fp8_quantize_t)" | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab8
t='dev\.ubuf\..*\.'
kernels="${t}(AtomicGemm|Fp8Quantize|CublasLtGemm|Fp8Gemm|Fp8ScalePointer|Gemm|GemmTuning|StreamCandidateBench|ReductionKernel|ReportRead|LayerKernels)GpuTest"
shared="${t}SharedGpuOpsGpuTest"
OUT=/tmp/suite8 STALL_S=120 timeout -k 10 440 bash $B/gpu-lanes.sh "0:${kernels};${shared}"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
cp /tmp/suite8/lanes.txt /tmp/suite8/feeds.tgz $O/ 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
echo "done t=$((SECONDS-start))"
