#!/usr/bin/env bash
# Session 9 call 3 (4 GPUs) at 6870bd3: NCCL's pipelined reduce-scatter with an SM margin for NCCL's kernel.
# GPU tests (OverlapOps on GPUs 0,1, Fp8Overlap on 2,3); the RS benchmark at tp 4 on five shapes, the pipelines with
# and without a margin beside the reference and the ring; the 8B layer at tp 4 against PyTorch, one round.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}OverlapOpsGpuTest" "2,3:${t}Fp8OverlapGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
timeout -k 5 160 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 4 --shapes 2048,3584,4096 8192,2048,8192 4096,6912,5120 16384,1024,4096 8192,7168,8192 --methods "auto;nccl;nccl:splits=2,margin=16;nccl:splits=4,margin=16;nccl:splits=4,margin=32;nccl:splits=8,margin=32;nccl:splits=4;ring:lowp=1,sub=4" --iters 20 --out $O/rs4.json > $O/rs4.txt 2>&1
echo "rs4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
OUT=$O/layer8 ALT_BUDGET_S=45 timeout -k 10 60 bash $B/run-gpu.sh "layer=1 --tp 4 $M8 --iters 20 --config $B/auto.yaml -- $T8" > $O/layer8.log 2>&1
echo "layer8 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -E "FAILED|failed:" -m 12 $O/suite.log
grep -E "comm |% of ideal" $O/rs4.txt | sed 's/(p10.*gemms/gemms/' | sed 's/ (on its streams [0-9.]*)//' | head -50; tail -3 $O/rs4.txt
grep -h -E "median step|hidden share|torch_(nccl|async) +step|MFU of" $O/layer8/log.txt 2>/dev/null | head -12
tar czf $O/call3.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs4.txt rs4.json layer8 layer8.log 2>/dev/null
rm -rf $O/suite $O/layer8
