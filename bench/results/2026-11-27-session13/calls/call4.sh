#!/usr/bin/env bash
# Session 13 call 4 (4 GPUs, the last of the device time) at 7e9b3a4: SharedGpuOpsGpuTest alone on GPU 3 (both
# ranks on one GPU, a JVM each), the class call 1's timeout cut, now without the NCCL methods.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 395 bash $B/gpu-lanes.sh "3:${t}SharedGpuOpsGpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
grep -c "✔" $O/suite/1-1/tests.txt; grep -h -A3 "✘" $O/suite/1-1/tests.txt | head -20 | cut -c1-250
tar czf $O/call4.tgz -C $O times.txt suite.log suite/lanes.txt suite/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/suite.log $O/times.txt
