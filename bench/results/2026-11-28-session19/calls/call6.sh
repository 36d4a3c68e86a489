#!/usr/bin/env bash
# Session 19 call 6 (2 GPUs): 8ada758 (one capture helper for the planner, the step graph and the GEMM timer; ubuf
# plan --cuda-graph). StepGraph, GraphCapture and Demo; then `ubuf plan` for 8B FP8 fc2 (rs, 8192x7168x4096, bias)
# issued call by call and as graph replays.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 170 bash $B/gpu-lanes.sh "0,1:${t}StepGraphGpuTest;${t}GraphCaptureGpuTest;${t}DemoGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/plan
for g in "" "--cuda-graph"; do
  left=$((260 - (SECONDS - start)))
  [ $left -lt 20 ] && { echo "plan $g skipped" >> $O/times.txt; continue; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 5 $left bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    plan --op rs --shape 8192,7168,4096 --bias --fp8 --tp 2 $g > $O/plan/rs-fp8${g:+-graph}.txt 2>&1
  echo "plan $g rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
for f in $O/plan/*.txt; do echo "== $f"; grep -E "chosen|nccl |scatter:sub=1,lowp=1 |ring:cs=1,sub=1,lowp=1 |rounds|rror" $f | head -8; done
tar czf $O/call6.tgz -C $O gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz plan 2>/dev/null
rm -rf $O/suite $O/plan $O/*.log $O/gpus.txt $O/times.txt; ls $O
