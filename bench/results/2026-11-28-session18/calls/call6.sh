#!/usr/bin/env bash
# Session 18 call 6 (4 GPUs): b92221a (no_comm primed with two steps, so FP8's gathered gradients are not E5M2
# zeros): the tp 4 steps again, 8B FP8 and bf16, 70B FP8 and bf16, `--clocks`.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run_demo() {  # name dims extra
  left=$((560 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 4 $2 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo 8b-tp4-fp8 "$M8" "--fp8"
run_demo 8b-tp4-bf16 "$M8" ""
run_demo 70b-tp4-fp8 "$M70" "--fp8"
run_demo 70b-tp4-bf16 "$M70" ""
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|Exception|rror" $f | head -7 | cut -c1-160; done
tar czf $O/call6.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
