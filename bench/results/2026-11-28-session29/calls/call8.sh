#!/usr/bin/env bash
# Session 29 call 8 (2x H200, the first 2-GPU kind lent this session; bundle b089415, which carries the twenty-eighth
# session's CPU-only --steps-per-sample / --calls-per-sample / rank_spread_ms / acrossRanks): how much of the layer's
# overlap cost and of the reduce-scatter's slack is the ranks' skew at each sample's start. The 8B demo at tp 2
# (bf16, --cuda-graph, one plan cache: the first run plans) with K = 1 and 4 steps a sample, A B B A; then `bench rs
# --tp 2` on GEMM-bound shapes with K = 1, 4, 1 calls a sample. The results are packed after every step, so a timeout
# still returns what ran.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
echo "commit $(cat $B/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
D=/tmp/skew; mkdir -p $D
pack() { tar czf $O/skew.tgz -C /tmp skew; }
demo() { # name K
  UB_PLAN_CACHE=$D/plans-tp2.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 90 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks --steps-per-sample $2 --out $D/$1.json > $D/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))"; grep -E "median step|hidden share|spread over the ranks" $D/$1.log | cut -c1-200
  pack
}
demo tp2-k1a 1; demo tp2-k4a 4; demo tp2-k4b 4; demo tp2-k1b 1
for k in 1 4 1; do
  CUDA_VISIBLE_DEVICES=0,1 timeout -k 10 80 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 \
    --shapes 8192,7168,4096 16384,7168,4096 4096,13824,5120 --methods "auto;scatter:sub=1,lowp=1;nccl" \
    --cuda-graph --calls-per-sample $k --out $D/rs-k$k-$SECONDS.json > $D/rs-k$k-$SECONDS.log 2>&1
  echo "bench rs K=$k rc=$? t=$((SECONDS-start))"
  grep -E "auto|ideal" $D/rs-k$k-*.log | tail -4 | cut -c1-200
  pack
done
