#!/usr/bin/env bash
# Session 30 call 7 (2x H200), 99ac482: the 8B tp 2 demo (bf16, --cuda-graph, one plan cache: the first run plans)
# with the GEMM choices of the committed tuning cache (A: the tuner before 99ac482 chose them) and chosen afresh at
# initialisation by the tuner that confirms back to back (B), A B B A; packed after every run.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
echo "commit $(cat $B/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
D=/tmp/tune7; mkdir -p $D /tmp/xdgA /tmp/xdgB
cp -r $B/xdg/. /tmp/xdgA/
pack() { cp /tmp/xdgB/ubuf/*.tsv $D/ 2>/dev/null; tar czf $O/tune7.tgz -C /tmp tune7; }
demo() { # name xdg
  XDG_CACHE_HOME=$2 UB_PLAN_CACHE=$D/plans-tp2.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 110 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks --out $D/$1.json > $D/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))"; grep -E "median step|hidden share|MFU|GEMM kinds|tuned" $D/$1.log | cut -c1-220
  pack
}
demo a1 /tmp/xdgA; demo b1 /tmp/xdgB; demo b2 /tmp/xdgB; demo a2 /tmp/xdgA
