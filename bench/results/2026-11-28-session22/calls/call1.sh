#!/usr/bin/env bash
# Session 22 call 1 (2 GPUs): scatter's own step cut apart from its pushes (tail=T) and the first arrival fused into
# the own GEMM (fuse=1): the op tests that name them, then `bench rs` at tp 2 as graph replays, beside the methods
# the tp 2 sweep chose on the same shapes.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg UB_PLAN_CACHE=/tmp/plans.properties
t='dev\.ubuf\..*\.'
OUT=/tmp/suite STALL_S=90 timeout -k 10 230 bash $B/gpu-lanes.sh "0,1:${t}(OverlapOps|GraphCapture)GpuTest;${t}Fp8OverlapGpuTest"
echo "lanes rc=$?"
tail -3 /tmp/suite/*/tests.txt 2>/dev/null | tail -20
timeout -k 10 320 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --cuda-graph --iters 10 \
  --shapes "16384,2048,4096 16384,2560,5120 8192,2048,4096 16384,4096,8192 4096,4096,8192 2048,6144,12288 16384,7168,4096 8192,14336,8192" \
  --methods "scatter:sub=1,lowp=1;scatter:sub=1,tail=4,lowp=1;scatter:sub=1,tail=2,lowp=1;scatter:sub=2,tail=4,lowp=1;scatter:sub=2,lowp=1;scatter:sub=2,tail=4,lowp=1,fuse=1;ring:cs=1,sub=4,lowp=1,fuse=1;ring:cs=1,sub=2,lowp=1,fuse=1;ring:cs=1,sub=1,lowp=1" \
  --out $O/rs-tp2.json > $O/rs-tp2.txt 2>&1
echo "bench rc=$?"
grep -v '^\s*$' $O/rs-tp2.txt | tail -120
tar czf $O/suite.tgz -C /tmp suite 2>/dev/null
