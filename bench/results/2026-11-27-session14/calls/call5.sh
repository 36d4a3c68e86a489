#!/usr/bin/env bash
# Session 14 call 5 (4 GPUs, the last of the device time) at 256f4b7: the collectives lane's classes that call 4's
# stall stopped or never reached: CollectiveClose (now tuning at initialisation), Watchdog, VmmUserBufferProcess.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=60 timeout -k 10 150 bash $B/gpu-lanes.sh "0,1:${t}(CollectiveClose|Watchdog|VmmUserBufferProcess)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
tar czf $O/call5.tgz -C $O times.txt suite.log suite/lanes.txt suite/feeds.tgz 2>/dev/null
rm -rf $O/suite $O/*.log $O/times.txt; ls $O
