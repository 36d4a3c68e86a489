#!/usr/bin/env bash
# Session 14 call 4 (4 GPUs) at fae6d5e: gpu-lanes.sh 1 (the thread-rank op and layer tests beside the collective
# and graph tests), the half of the suite call 1 did not run.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
OUT=$O/suite STALL_S=90 timeout -k 10 520 bash $B/gpu-lanes.sh 1 > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
tar czf $O/call4.tgz -C $O times.txt suite.log suite/lanes.txt suite/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/*.log $O/times.txt; ls $O
