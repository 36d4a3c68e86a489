#!/usr/bin/env bash
# Session 22 call 5 (2 GPUs): the dense sums inside the reduce-scatters: `bench rs` at tp 2 as graph replays on four
# GEMM-bound shapes, the methods whose last step ends in a sum, with the row/column sum kernels
# (-Dubuf.denseSum=false) and the dense ones alternating, A B A B; then the 8B tp 2 FP8 demo with this session's
# kernel changes off and on (old: -Dubuf.denseSum=false -Dubuf.swigluWords=false; the FP8 amax change has no
# switch, so this compares the sum and SwiGLU changes only), one plan cache.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_PLAN_CACHE=/tmp/plans.properties UB_TIMEOUT=20
mkdir -p /tmp/rs /tmp/demo
for r in 1 2; do
  order="row dense"; [ $r = 2 ] && order="dense row"
  for mode in $order; do
    prop=-Dubuf.denseSum=true; [ $mode = row ] && prop=-Dubuf.denseSum=false
    timeout -k 10 120 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --cuda-graph --iters 10 \
      --shapes "16384,4096,8192 8192,7168,4096 16384,14336,8192 4096,12288,12288" \
      --methods "scatter:sub=1,lowp=1;scatter:sub=2,lowp=1;ring:cs=1,sub=2,lowp=1;scatter:sub=1" \
      --out /tmp/rs/rs-$mode-r$r.json > /tmp/rs/rs-$mode-r$r.txt 2>&1
    echo "rs $mode r$r rc=$?"; grep -E '^rs |% of ideal' /tmp/rs/rs-$mode-r$r.txt | awk '{print $1,$2,$3,$4,$5,$6}'
  done
done
for mode in old new; do
  opts=""; [ $mode = old ] && opts="-Dubuf.denseSum=false -Dubuf.swigluWords=false"
  JAVA_TOOL_OPTIONS="$opts" CUDA_VISIBLE_DEVICES=0,1 timeout -k 10 100 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --cuda-graph --clocks \
    --fp8 --out /tmp/demo/fp8-$mode.json > /tmp/demo/fp8-$mode.txt 2>&1
  echo "demo fp8 $mode rc=$?"; grep -E '^median step|hidden share' /tmp/demo/fp8-$mode.txt
done
tar czf $O/runs.tgz -C /tmp rs demo
