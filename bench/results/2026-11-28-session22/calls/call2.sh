#!/usr/bin/env bash
# Session 22 call 2 (2 GPUs): the dense sum kernels. The reduction kernel's test (dense and strided views, bias) and
# the ops that end in a sum (tp 2 overlap and FP8 overlap suites), then `bench kernels --kernels rs_sum,rs_sum_f32`
# with the row/column kernels (-Dubuf.denseSum=false) and the dense ones alternating, A B A B, on GPU 0.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_PLAN_CACHE=/tmp/plans.properties
t='dev\.ubuf\..*\.'
OUT=/tmp/suite STALL_S=90 timeout -k 10 300 bash $B/gpu-lanes.sh "0,1:${t}(ReductionKernel|LayerKernels)GpuTest;${t}(OverlapOps|Fp8Overlap)GpuTest"
echo "lanes rc=$?"
mkdir -p /tmp/k
for r in 1 2; do
  for mode in row dense; do
    prop=-Dubuf.denseSum=true; [ $mode = row ] && prop=-Dubuf.denseSum=false
    CUDA_VISIBLE_DEVICES=0 timeout -k 10 90 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench kernels \
      --kernels rs_sum,rs_sum_f32 --iters 30 --out /tmp/k/sum-$mode-r$r.json > /tmp/k/sum-$mode-r$r.txt 2>&1
    echo "kernels $mode r$r rc=$?"; grep -E 'rs_sum' /tmp/k/sum-$mode-r$r.txt
  done
done
tar czf $O/suite.tgz -C /tmp suite 2>/dev/null
tar czf $O/kernels.tgz -C /tmp k
