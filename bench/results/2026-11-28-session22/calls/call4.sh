#!/usr/bin/env bash
# Session 22 call 4 (2 GPUs): the SwiGLU word kernel: the layer kernels' test and the TP layers' (tp 2); swiglu_fwd and
# bias_swiglu_fwd with the old kernels (-Dubuf.swigluWords=false) and the new alternating on GPU 0; then the 8B tp 2
# demo (bf16, CUDA graph) with this session's three kernel changes off (old: -Dubuf.denseSum=false
# -Dubuf.swigluWords=false) and on, A B A B, one plan cache for all runs.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}LayerKernelsGpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$?"
mkdir -p /tmp/k /tmp/demo
for r in 1 2; do
  for mode in old new; do
    prop=-Dubuf.swigluWords=true; [ $mode = old ] && prop=-Dubuf.swigluWords=false
    CUDA_VISIBLE_DEVICES=0 timeout -k 10 90 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench kernels \
      --kernels swiglu_fwd,bias_swiglu_fwd --iters 30 --out /tmp/k/swiglu-$mode-r$r.json > /tmp/k/swiglu-$mode-r$r.txt 2>&1
    echo "kernels $mode r$r rc=$?"; grep -E 'swiglu' /tmp/k/swiglu-$mode-r$r.txt
  done
done
export UB_PLAN_CACHE=/tmp/demo/plans.properties UB_TIMEOUT=20 CUDA_VISIBLE_DEVICES=0,1
for r in 1 2; do
  order="old new"; [ $r = 2 ] && order="new old"
  for mode in $order; do
    opts=""; [ $mode = old ] && opts="-Dubuf.denseSum=false -Dubuf.swigluWords=false"
    JAVA_TOOL_OPTIONS="$opts" timeout -k 10 100 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 \
      --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --cuda-graph --clocks \
      --out /tmp/demo/bf16-$mode-r$r.json > /tmp/demo/bf16-$mode-r$r.txt 2>&1
    echo "demo $mode r$r rc=$?"; grep -E 'overlap|no_comm|hidden' /tmp/demo/bf16-$mode-r$r.txt | head -6
  done
done
tar czf $O/suite.tgz -C /tmp suite 2>/dev/null
tar czf $O/runs.tgz -C /tmp k demo
