#!/usr/bin/env bash
# Session 25 call 7 (4 GPUs): FourRankOpsGpuTest with the ring's fused tail at tp 4 adding its bias in the last
# GEMMs' epilogue (two new cases), beside nothing else.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 240 bash $B/gpu-lanes.sh "0,1,2,3:${t}FourRankOpsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite7/lanes.txt 2>/dev/null
cp /tmp/suite7/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite7/*/tests.txt; do grep -h -A3 "FAILED" $f 2>/dev/null | head -30 | cut -c1-300; done
grep -h "fuse=1" /tmp/suite7/*/tests.txt | grep -v STARTED | cut -c1-250
tar czf $O/suite.tgz -C /tmp suite7 2>/dev/null
