#!/usr/bin/env bash
# Session 13 call 1 (4 GPUs): the whole GPU suite at 2a8b5bd (gpu-lanes.sh's default lanes: VMM sharing as the
# automatic choice for threads, a layer's ring_exchange reduce-scatter as scatter:lowp=1, the new FourRankOps class
# and scatter's SM pushes among the cases), then, with the time left, bench rs at tp 4 on communication-bound shapes:
# scatter's pushes on the copy engines against SM copy kernels of 4, 8 and 16 blocks.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
OUT=$O/suite STALL_S=90 timeout -k 10 500 bash $B/gpu-lanes.sh > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/rs
left=$((580 - (SECONDS - start)))
if [ $left -gt 45 ]; then
  S="4096,1024,4096 8192,1024,4096 2048,3584,4096 4096,2048,8192 8192,3584,4096"
  MS="nccl;scatter:lowp=1;scatter:sub=2,lowp=1;scatter:lowp=1,sm=4;scatter:lowp=1,sm=8;scatter:lowp=1,sm=16;scatter:sub=2,lowp=1,sm=8"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 $left bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 4 --shapes $S --methods "$MS" --iters 20 --out $O/rs/rs4-sm.json > $O/rs/rs4-sm.txt 2>&1
  echo "rs4-sm rc=$? t=$((SECONDS-start))" >> $O/times.txt
else
  echo "skip rs4-sm (time)" >> $O/times.txt
fi
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -E "✘|FAILED|MethodSource.*✘" $f 2>/dev/null | head -8; done
grep -v "^\s*$" $O/rs/rs4-sm.txt 2>/dev/null | tail -60 | cut -c1-180
tar czf $O/call1.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs 2>/dev/null
rm -rf $O/suite $O/rs
