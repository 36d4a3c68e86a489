#!/usr/bin/env bash
# Session 12 call 3 (4 GPUs) at 64fa377: the layer with scatter among fc2's candidates beside PyTorch's TP layer
# (8B, --cuda-graph, ranks as threads, alternating rounds) at tp 4 and tp 2; then one launched and one threads demo
# with NCCL_DEBUG=INFO, to see which transport NCCL picks in each (call 1: no_overlap 4.49 ms launched, 4.20 threads).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
UB_TIMEOUT=20 OUT=$O/layer8 ALT_BUDGET_S=125 timeout -k 10 140 bash $B/run-gpu.sh "layer=2 --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=$O/layer8tp2 ALT_BUDGET_S=125 timeout -k 10 140 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph -- $T8" > $O/layer8tp2.log 2>&1
echo "layer8tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
for how in launched threads; do
  main=(dev.ubuf.cli.UbufCli); [ $how = launched ] && main=(dev.ubuf.launch.Launcher --nproc-per-node 4 dev.ubuf.cli.UbufCli)
  [ $((SECONDS - start)) -gt 330 ] && break
  CUDA_VISIBLE_DEVICES=0,1,2,3 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,TUNING UB_TIMEOUT=20 timeout -k 5 40 bash $B/java.sh -cp "$B/lib/*" "${main[@]}" demo --tp 4 $M8 --iters 10 --config $B/auto.yaml --cuda-graph --out $O/demo/nccl-$how.json > $O/demo/nccl-$how.txt 2>&1
  echo "demo nccl-$how rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
cat $O/gpus.txt $O/times.txt
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of|round" $O/layer8/log.txt $O/layer8tp2/log.txt 2>/dev/null | head -40
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "median step|via P2P|via SHM|via NET|Channel 00/0 :|P2P/|CUMEM|cuMem" $f | sort | uniq -c | sort -rn | head -8 | cut -c1-200; done
tar czf $O/call3.tgz -C $O gpus.txt times.txt layer8 layer8.log layer8tp2 layer8tp2.log demo 2>/dev/null
rm -rf $O/layer8 $O/layer8tp2 $O/demo
