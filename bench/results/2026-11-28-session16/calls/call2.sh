#!/usr/bin/env bash
# Session 16 call 2 (4 GPUs): call 1's demos again with the bundle's auto.yaml (call 1's .gpu lacked it): issue 25's
# FP8 bar with b9abfd8's byte transpose, --fp8 --cuda-graph beside bf16, at 8B and 70B dims, tp 4 then tp 2 (GPUs 0,1)
# while time is left.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run() { # name devices limit args...
  local name=$1 dev=$2 lim=$3; shift 3
  local left=$((540 - (SECONDS - start)))
  [ $left -lt 40 ] && { echo "$name skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=$dev UB_TIMEOUT=30 timeout -k 10 $((left < lim ? left : lim)) bash $B/java.sh -cp "$B/lib/*" \
    dev.ubuf.cli.UbufCli demo --iters 20 --config $B/auto.yaml --cuda-graph "$@" --out $O/demo/$name.json \
    > $O/demo/$name.log 2>&1
  echo "$name rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run demo-8b-tp4-fp8 0,1,2,3 90 --tp 4 $M8 --fp8
run demo-8b-tp4-bf16 0,1,2,3 90 --tp 4 $M8
run demo-70b-tp4-fp8 0,1,2,3 130 --tp 4 $M70 --fp8
run demo-70b-tp4-bf16 0,1,2,3 130 --tp 4 $M70
run demo-8b-tp2-fp8 0,1 90 --tp 2 $M8 --fp8
run demo-8b-tp2-bf16 0,1 90 --tp 2 $M8
run demo-70b-tp2-fp8 0,1 130 --tp 2 $M70 --fp8
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|method: auto|Exception|rror" $f | head -12 | cut -c1-200; done
tar czf $O/call2.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
