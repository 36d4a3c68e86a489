#!/usr/bin/env bash
# Session 28 call 1 (4 GPUs): 599dd99. StepGraphGpuTest (tp 2 and 4; its ring case traces each op as one span,
# b461162), then one 8B tp 2 bf16 demo traced with ops as one span each (-Dubuf.traceOpSteps=false) and one traced
# per plan step, both on one plan cache (GPUs 0,1), then the same coarse trace at 8B tp 4.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
echo "commit $(cat $B/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1,2,3:${t}StepGraphGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A4 "FAILED\|\[X\]" $f 2>/dev/null | head -30 | cut -c1-300; done
tar czf $O/suite.tgz -C /tmp suite1 2>/dev/null
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
D=/tmp/demo1; mkdir -p $D
run() { # name gpus tp traceOpSteps
  UB_PLAN_CACHE=$D/plans-tp$3.properties CUDA_VISIBLE_DEVICES=$2 UB_TIMEOUT=20 timeout -k 10 100 \
    bash $B/java.sh -Dubuf.traceOpSteps=$4 -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp $3 $M8 --iters 20 \
    --config $B/auto.yaml --cuda-graph --clocks --trace $D/trace-$1.json --out $D/$1.json > $D/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share" $D/$1.log | cut -c1-150
}
run 8b-tp2-coarse 0,1 2 false
run 8b-tp2-fine 0,1 2 true
run 8b-tp2-coarse2 0,1 2 false
run 8b-tp4-coarse 0,1,2,3 4 false
tar czf $O/demo.tgz -C /tmp demo1
