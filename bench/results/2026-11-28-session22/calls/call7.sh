#!/usr/bin/env bash
# Session 22 call 7 (1 GPU): the final kernels' tests (layer kernels, reductions, FP8 quantize), then every layer
# kernel beside its PyTorch twin, 2 alternating rounds, at this bundle (GELU two words a thread, the bias
# gradient's one-wave parts, the SwiGLU word kernel, the dense sums, the FP8 amax per block).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}(LayerKernels|ReductionKernel|Fp8Quantize)GpuTest"
echo "lanes rc=$?"
OUT=/tmp/kt7 ALT_BUDGET_S=300 timeout -k 10 320 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30"
echo "kernels rc=$?"
tar czf $O/suite.tgz -C /tmp suite7 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kt7
