#!/usr/bin/env bash
# Session 9 call 2 (2 GPUs; the 4-GPU kind was no longer lent) at 58448bb: NCCL's reduce-scatter pipelined over GEMM
# column blocks (nccl:splits=S). GPU tests (OverlapOps, Fp8Overlap: every element against the NCCL reference); then the
# RS benchmark at tp 2 on the shapes where the reduce-scatter missed its ideal (K 1024-7168), the pipelines beside the
# reference and the rings, twice; then the 8B layer at tp 2 against PyTorch if time is left.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 260 bash $B/gpu-lanes.sh "0,1:${t}(OverlapOps|Fp8Overlap)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
for r in 1 2; do
  timeout -k 5 110 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --shapes 8192,2048,8192 16384,1024,4096 4096,3584,4096 8192,3584,4096 2048,6912,5120 --methods "auto;nccl;nccl:splits=2;nccl:splits=4;nccl:splits=8;ring;ring:lowp=1,sub=4" --iters 20 --out $O/rs2-r$r.json > $O/rs2-r$r.txt 2>&1
  echo "rs2 r$r rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
left=$((575 - (SECONDS-start)))
if [ $left -gt 80 ]; then
  OUT=$O/layer8 ALT_BUDGET_S=$((left-15)) timeout -k 10 $((left-5)) bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
  echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -E "FAILED|failed:" -m 12 $O/suite.log
for f in $O/rs2-r*.txt; do echo "== $f"; grep -E "comm |% of ideal|ideal" $f | sed 's/(p10.*gemms/gemms/' | head -50; done
for d in layer8; do echo "== $d"; grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of" $O/$d/log.txt 2>/dev/null | head -20; done
tar czf $O/call2.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs2-r1.txt rs2-r1.json rs2-r2.txt rs2-r2.json layer8 layer8.log 2>/dev/null
rm -rf $O/suite $O/layer8
