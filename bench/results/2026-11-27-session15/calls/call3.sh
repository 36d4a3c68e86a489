#!/usr/bin/env bash
# Session 15 call 3 (4 GPUs): issue 25's FP8 bar at every size it names: the demo with --fp8 --cuda-graph beside
# bf16 in the same call, 8B and 70B dims, tp 2 (two pairs side by side) and tp 4, then the 8B FP8 step traced (at tp 4,
# or at tp 2 on a 2-GPU machine).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
demo() { # devices tp dims-name limit extra...
  local dev=$1 tp=$2 name=$3 lim=$4; shift 4
  local dims=$M8; [ $name = 70b ] && dims=$M70
  for mode in fp8 bf16; do
    local extra=""; [ $mode = fp8 ] && extra="--fp8"
    local left=$((555 - (SECONDS - start)))
    [ $left -lt 40 ] && { echo "demo $name tp$tp $mode skipped, $left s left" >> $O/times.txt; continue; }
    CUDA_VISIBLE_DEVICES=$dev UB_TIMEOUT=30 timeout -k 10 $((left < lim ? left : lim)) bash $B/java.sh -cp "$B/lib/*" \
      dev.ubuf.cli.UbufCli demo --tp $tp $dims --iters 20 --config $B/auto.yaml --cuda-graph $extra "$@" \
      --out $O/demo/demo-$name-tp$tp-$mode.json > $O/demo/demo-$name-tp$tp-$mode.log 2>&1
    echo "demo $name tp$tp $mode rc=$? t=$((SECONDS-start))" >> $O/times.txt
  done
}
# A 2-GPU machine (no 4-GPU kind was lent when this ran) takes the tp 2 parts one after another.
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -ge 4 ]; then
  demo 0,1 2 8b 120 &
  demo 2,3 2 70b 150 &
  wait
  demo 0,1,2,3 4 70b 150
  tt=4 td=0,1,2,3
else
  demo 0,1 2 8b 120
  demo 0,1 2 70b 150
  tt=2 td=0,1
fi
left=$((555 - (SECONDS - start)))
if [ $left -gt 60 ]; then
  CUDA_VISIBLE_DEVICES=$td UB_TIMEOUT=30 timeout -k 10 $((left < 120 ? left : 120)) bash $B/java.sh -cp "$B/lib/*" \
    dev.ubuf.cli.UbufCli demo --tp $tt $M8 --iters 20 --config $B/auto.yaml --cuda-graph --fp8 \
    --trace $O/demo/trace-8b-tp$tt-fp8.json --out $O/demo/demo-8b-tp$tt-fp8-traced.json > $O/demo/demo-8b-tp$tt-fp8-traced.log 2>&1
  echo "demo 8b tp$tt fp8 traced rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|method: auto|AGREE|DISAGREE|Exception|rror" $f | head -12 | cut -c1-200; done
tar czf $O/call3.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
