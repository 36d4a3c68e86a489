#!/usr/bin/env bash
# Session 26 call 4 (4 GPUs): where a reduce-scatter sends its credits, three overlap-rs jars on the same bundle:
# O = 2f3184d (credits at the end of a call), N = f984b12 (at the next call's start, on a comm stream), A = the
# working tree after f984b12 (at the next call's start ahead of the first GEMM on the compute stream: scatter,
# pipeline, and the ring at tp 2). `bench rs` as graph replays at tp 4 (all four GPUs) and tp 2 (GPUs 0,1), O N A A N O;
# then the 8B tp 4 bf16 demo, one plan cache written by a first planning run (A), O A N N A O.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_TIMEOUT=20
cpof() { case $1 in O) echo "$B/old/*:$B/lib/*";; N) echo "$B/mid/*:$B/lib/*";; *) echo "$B/lib/*";; esac; }
mkdir -p /tmp/rs4 /tmp/demo4
for tp in 4 2; do
  if [ $tp = 4 ]; then
    shapes="8192,3584,4096 8192,1024,4096 2048,2048,8192 4096,6912,5120"
    methods="scatter:sub=1,lowp=1;scatter:sub=1,lowp=1,fuse=1;ring:sub=2,lowp=1"; dev=0,1,2,3
  else
    shapes="8192,7168,4096 4096,1024,4096 2048,8192,8192"
    methods="ring:cs=1,sub=2,lowp=1,fuse=1;scatter:sub=1,lowp=1;pipeline:splits=2"; dev=0,1
  fi
  k=0
  for jar in O N A A N O; do
    k=$((k+1)); left=$((560 - (SECONDS - start))); [ $left -lt 120 ] && { echo "tp $tp $jar skipped"; continue; }
    f=/tmp/rs4/tp$tp-$jar-$k
    CUDA_VISIBLE_DEVICES=$dev timeout -k 10 60 bash $B/java.sh -cp "$(cpof $jar)" dev.ubuf.cli.UbufCli bench rs --tp $tp \
      --cuda-graph --iters 10 --shapes "$shapes" --methods "$methods" --out $f.json > $f.txt 2>&1
    echo "tp $tp $jar rc=$? t=$((SECONDS-start))"
  done
done
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
i=0
for jar in A O A N N A O; do
  i=$((i+1)); left=$((575 - (SECONDS - start))); [ $left -lt 30 ] && { echo "demo $i skipped"; continue; }
  UB_PLAN_CACHE=/tmp/demo4/plans-bf16.properties timeout -k 10 60 bash $B/java.sh -cp "$(cpof $jar)" dev.ubuf.cli.UbufCli \
    demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks --out /tmp/demo4/$i-bf16-$jar.json \
    > /tmp/demo4/$i-bf16-$jar.log 2>&1
  echo "demo $i $jar rc=$? t=$((SECONDS-start))"; grep -E "median step overlap|hidden share" /tmp/demo4/$i-bf16-$jar.log | cut -c1-150
done
grep -h "fc2_fprop" /tmp/demo4/plans-*.properties | cut -c1-200
tar czf $O/runs.tgz -C /tmp rs4 demo4
