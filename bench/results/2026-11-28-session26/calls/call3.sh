#!/usr/bin/env bash
# Session 26 call 3 (4 GPUs, right after call 2): `bench rs` as graph replays, old (2f3184d's overlap-rs jar first:
# credits at the end of a call) against new (f984b12: credits at the next call's start), O N N O, at tp 4 (all four
# GPUs) and tp 2 (GPUs 0,1), on the methods the planner takes.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_TIMEOUT=20
mkdir -p /tmp/rs3
for tp in 4 2; do
  if [ $tp = 4 ]; then
    shapes="8192,3584,4096 8192,1024,4096 2048,2048,8192 4096,6912,5120"
    methods="scatter:sub=1,lowp=1;scatter:sub=1,lowp=1,fuse=1;ring:sub=2,lowp=1"; dev=0,1,2,3
  else
    shapes="8192,7168,4096 4096,1024,4096 2048,8192,8192"
    methods="ring:cs=1,sub=2,lowp=1,fuse=1;scatter:sub=1,lowp=1;pipeline:splits=2"; dev=0,1
  fi
  for jar in O N N O; do
    left=$((580 - (SECONDS - start))); [ $left -lt 50 ] && { echo "tp $tp $jar skipped"; continue; }
    cp="$B/lib/*"; [ $jar = O ] && cp="$B/old/*:$B/lib/*"
    n=$(ls /tmp/rs3 | grep -c "tp$tp-$jar")
    f=/tmp/rs3/tp$tp-$jar-$n
    CUDA_VISIBLE_DEVICES=$dev timeout -k 10 $((left - 5)) bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench rs --tp $tp \
      --cuda-graph --iters 10 --shapes "$shapes" --methods "$methods" --out $f.json > $f.txt 2>&1
    echo "tp $tp $jar rc=$? t=$((SECONDS-start))"; grep -E '^rs |% of ideal' $f.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | head -20
  done
done
tar czf $O/rs.tgz -C /tmp rs3
