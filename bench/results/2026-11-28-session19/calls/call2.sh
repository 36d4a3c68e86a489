#!/usr/bin/env bash
# Session 19 call 2 (4 GPUs): c1eca62. (A) tp 2 on GPUs 0,1, the new jars, the choices fixed through plan caches
# (aggregate for both all-gathers) but for fc2's reduce-scatter: ring:cs=1,sub=1,lowp=1 with free=1 and without,
# bf16 and FP8, alternating, two rounds. (B) tp 4, 8B: d3ca9da's jars (old) and the new ones, each planning once
# into its own cache with its tables printed, bf16 and FP8, then a second round from the caches; FP8 new traced.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
cp $B/plans-tp2-free.properties $O/demo/plans-tp2-free.properties
cp $B/plans-tp2-nofree.properties $O/demo/plans-tp2-nofree.properties
run_demo() {  # name side cache tp extra [debug]
  left=$((560 - (SECONDS - start)))
  [ $left -lt 30 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  cp="$B/lib/*"; [ $2 = old ] && cp="$B/old/lib/*"
  gpus=0,1; [ $4 = 4 ] && gpus=0,1,2,3
  UB_PLAN_CACHE=$O/demo/$3.properties UB_DEBUG=${6:-0} CUDA_VISIBLE_DEVICES=$gpus UB_TIMEOUT=20 \
    timeout -k 10 $((left < 100 ? left : 100)) bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli \
    demo --tp $4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks $5 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2; do
  run_demo tp2-bf16-free-$r new plans-tp2-free 2 ""
  run_demo tp2-bf16-nofree-$r new plans-tp2-nofree 2 ""
  run_demo tp2-fp8-nofree-$r new plans-tp2-nofree 2 "--fp8"
  run_demo tp2-fp8-free-$r new plans-tp2-free 2 "--fp8"
done
run_demo tp4-fp8-new-1 new plans-tp4-new 4 "--fp8 --trace $O/demo/trace-tp4-fp8-new.json" 1
run_demo tp4-fp8-old-1 old plans-tp4-old 4 "--fp8 --trace $O/demo/trace-tp4-fp8-old.json" 1
run_demo tp4-bf16-new-1 new plans-tp4-new 4 "" 1
run_demo tp4-bf16-old-1 old plans-tp4-old 4 "" 1
run_demo tp4-fp8-old-2 old plans-tp4-old 4 "--fp8"
run_demo tp4-fp8-new-2 new plans-tp4-new 4 "--fp8"
run_demo tp4-bf16-old-2 old plans-tp4-old 4 ""
run_demo tp4-bf16-new-2 new plans-tp4-new 4 ""
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|Exception|rror" $f | head -9 | cut -c1-160; done
tar czf $O/call2.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
