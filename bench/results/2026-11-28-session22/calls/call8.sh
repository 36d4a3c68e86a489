#!/usr/bin/env bash
# Session 22 call 8 (2 GPUs): the dense sums reading peers' memory. `oneshot` pull-reduces this rank's rows from every
# rank's buffer through the sum kernel (full rows: the dense kernel since fa3c182); `bench rs --tp 2 --cuda-graph` on
# five shapes with the row/column sums (-Dubuf.denseSum=false) and the dense ones alternating, A B B A.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_TIMEOUT=20
mkdir -p /tmp/rs8
for r in 1 2; do
  order="row dense"; [ $r = 2 ] && order="dense row"
  for mode in $order; do
    prop=-Dubuf.denseSum=true; [ $mode = row ] && prop=-Dubuf.denseSum=false
    timeout -k 10 100 bash $B/java.sh $prop -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --cuda-graph --iters 10 \
      --shapes "1024,4096,4096 2048,2048,8192 2048,7168,4096 4096,4096,8192 8192,2048,4096" --methods "oneshot" \
      --out /tmp/rs8/rs-$mode-r$r.json > /tmp/rs8/rs-$mode-r$r.txt 2>&1
    echo "rs $mode r$r rc=$?"; grep -E '^rs |oneshot' /tmp/rs8/rs-$mode-r$r.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}'
  done
done
tar czf $O/rs.tgz -C /tmp rs8
