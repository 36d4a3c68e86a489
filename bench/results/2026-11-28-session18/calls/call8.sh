#!/usr/bin/env bash
# Session 18 call 8 (4 GPUs): d3ca9da: the 8B tp 4 bf16 demo twice from empty plan caches with the planner's tables
# printed: does the planner's choice for fc2 (scatter in call 3, NCCL in call 6) flip within one machine?
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/demo
for r in 1 2; do
  left=$((300 - (SECONDS - start)))
  [ $left -lt 40 ] && break
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 UB_PLAN_CACHE=off UB_DEBUG=1 timeout -k 10 $((left < 90 ? left : 90)) bash $B/java.sh -cp "$B/lib/*" \
    dev.ubuf.cli.UbufCli demo --tp 4 --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml \
    --cuda-graph --out $O/demo/8b-tp4-bf16-$r.json > $O/demo/8b-tp4-bf16-$r.log 2>&1
  echo "demo $r rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
cat $O/gpus.txt $O/times.txt
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|auto ran|Exception|rror" $f | head -8 | cut -c1-160
  grep -h -A32 "plan rs tp4 bf16 m8192 k3584 n4096 bias:" $f | grep -E "nccl |scatter|ring:cs=1,sub=2,lowp=1 |chosen" | head -10; done
tar czf $O/call8.tgz -C $O gpus.txt times.txt demo 2>/dev/null
rm -rf $O/demo $O/gpus.txt $O/times.txt; ls $O
