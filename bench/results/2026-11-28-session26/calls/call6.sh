#!/usr/bin/env bash
# Session 26 call 6 (4 GPUs, right after call 5, run inline): 771bc2b, the final credits: `bench rs` as graph replays,
# the shapes and methods of calls 3-4, two runs at tp 4 (all four GPUs) and tp 2 (GPUs 0,1), alternating.
export UB_SKIPMC=1 XDG_CACHE_HOME=$PWD/.gpu/xdg UB_TIMEOUT=20; B=$PWD/.gpu; mkdir -p $OUT/rs6
for r in 1 2; do
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 10 60 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 4 \
    --cuda-graph --iters 10 --shapes "8192,3584,4096 8192,1024,4096 2048,2048,8192 4096,6912,5120" \
    --methods "scatter:sub=1,lowp=1;scatter:sub=1,lowp=1,fuse=1;ring:sub=2,lowp=1" --out $OUT/rs6/tp4-F-$r.json \
    > $OUT/rs6/tp4-F-$r.txt 2>&1; echo "tp4 $r rc=$?"
  CUDA_VISIBLE_DEVICES=0,1 timeout -k 10 60 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 \
    --cuda-graph --iters 10 --shapes "8192,7168,4096 4096,1024,4096 2048,8192,8192" \
    --methods "ring:cs=1,sub=2,lowp=1,fuse=1;scatter:sub=1,lowp=1;pipeline:splits=2" --out $OUT/rs6/tp2-F-$r.json \
    > $OUT/rs6/tp2-F-$r.txt 2>&1; echo "tp2 $r rc=$?"
done
cp .gpu/COMMIT $OUT/rs6/
