#!/usr/bin/env bash
# Session 25 call 10 (2 GPUs): b8ed191's ThreadDomain (the first rank failure that is not a consequence of another's
# reported) on real contexts: RingFusedTailGpuTest and CublasLtGemmGpuTest.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite10 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}RingFusedTailGpuTest" "1:${t}CublasLtGemmGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite10/lanes.txt 2>/dev/null
cp /tmp/suite10/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite10/*/tests.txt; do grep -h -A3 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
