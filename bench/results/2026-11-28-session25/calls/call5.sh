#!/usr/bin/env bash
# Session 25 call 5 (2 GPUs): the corrected bias-epilogue tests (RingFusedTailGpuTest, CublasLtGemmGpuTest beside it),
# then where the 8B tp 2 step's exposed communication is now: the demo, bf16 then FP8, --trace, planning afresh.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite5 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}RingFusedTailGpuTest" "1:${t}CublasLtGemmGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite5/lanes.txt 2>/dev/null
cp /tmp/suite5/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite5/*/tests.txt; do grep -h -A3 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite5 2>/dev/null
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo5
for mode in bf16 fp8; do
  extra=""; [ $mode = fp8 ] && extra="--fp8"
  UB_PLAN_CACHE=/tmp/demo5/plans-$mode.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 120 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph \
    --clocks $extra --trace /tmp/demo5/trace-8b-tp2-$mode.json --out /tmp/demo5/8b-$mode.json > /tmp/demo5/8b-$mode.log 2>&1
  echo "demo $mode rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|method: auto ran" /tmp/demo5/8b-$mode.log | cut -c1-150
  sed -n '/traced step, broken down/,$p' /tmp/demo5/8b-$mode.log | head -60 | cut -c1-110
done
tar czf $O/demo.tgz -C /tmp demo5
