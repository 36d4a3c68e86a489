#!/usr/bin/env bash
# Session 29 call 9 (2x H200, bundle b089415): K = 1 against 4 steps a sample for the 8B FP8 step and the 70B bf16
# step at tp 2 (--cuda-graph; one plan cache each, the first run plans), packed after every run.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
echo "commit $(cat $B/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 XDG_CACHE_HOME=$B/xdg
D=/tmp/skew9; mkdir -p $D
pack() { tar czf $O/skew9.tgz -C /tmp skew9; }
demo() { # name K cache dims...
  local name=$1 k=$2 cache=$3; shift 3
  UB_PLAN_CACHE=$D/$cache CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 100 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 "$@" --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks --steps-per-sample $k --out $D/$name.json > $D/$name.log 2>&1
  echo "demo $name rc=$? t=$((SECONDS-start))"; grep -E "median step|hidden share|spread over the ranks" $D/$name.log | cut -c1-200
  pack
}
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
demo fp8-k1a 1 plans-fp8.properties $M8 --fp8
demo fp8-k4a 4 plans-fp8.properties $M8 --fp8
demo 70b-k1a 1 plans-70b.properties $M70
demo 70b-k4a 4 plans-70b.properties $M70
