#!/usr/bin/env bash
# Session 12 call 1 (4 GPUs): the RS method scatter (64fa377) and the first-step hang, threads against processes.
# Tests: OverlapOps on GPUs 0-3 (the two-rank cases, scatter among them, then the four-rank cases), Fp8Overlap and
# GraphCapture on GPUs 2,3. bench rs at tp 4 on the sweep's RS shapes from M = 2048: scatter's variants beside ring,
# oneshot, NCCL and auto. Then the 8B tp 4 demo with --cuda-graph, ranks as processes (the launcher) and as threads,
# alternating, each bounded by UB_TIMEOUT=20 (1570e2e's launched demo: its first GPU run).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 230 bash $B/gpu-lanes.sh "0,1,2,3:${t}OverlapOpsGpuTest" "2,3:${t}(Fp8Overlap|GraphCapture)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/rs
S="2048,3584,4096 4096,1024,4096 8192,1024,4096 4096,3584,4096 8192,3584,4096 16384,3584,4096 4096,2048,8192 4096,7168,8192 8192,7168,8192 4096,12288,12288"
MS="auto;nccl;ring:cs=1,sub=2,lowp=1;oneshot;scatter;scatter:sub=2;scatter:lowp=1;scatter:sub=2,lowp=1;scatter:sub=4,lowp=1"
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 170 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 4 --shapes $S --methods "$MS" --iters 20 --out $O/rs/rs4.json > $O/rs/rs4.txt 2>&1
echo "rs4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
run() { # NAME LIMIT launched|threads
  local n=$1 lim=$2 how=$3 main=(dev.ubuf.cli.UbufCli)
  if [ $((SECONDS - start + lim)) -gt 545 ]; then echo "skip $n (time)" >> $O/times.txt; return; fi
  [ "$how" = launched ] && main=(dev.ubuf.launch.Launcher --nproc-per-node 4 dev.ubuf.cli.UbufCli)
  CUDA_VISIBLE_DEVICES=0,1,2,3 UB_TIMEOUT=20 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" "${main[@]}" demo --tp 4 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --out $O/demo/$n.json > $O/demo/$n.txt 2>&1
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2 3 4 5 6; do run launched-r$r 40 launched; run threads-r$r 35 threads; done
cat $O/gpus.txt $O/times.txt; cat $O/suite/lanes.txt 2>/dev/null
grep -h -E "FAILED|differ|expected" $O/suite/*/tests.txt 2>/dev/null | head -20
grep -v "^\s*$" $O/rs/rs4.txt | tail -120 | cut -c1-180
for f in $O/demo/*.txt; do echo "== $f"; grep -h -E "ranks:|median step overlap|hidden share|MFU of|untuned|ubuf_wait|aborts" $f | cut -c1-200 | head -6; done
tar czf $O/call1.tgz -C $O --exclude='junit' gpus.txt times.txt suite.log suite/lanes.txt suite/feeds.tgz rs demo 2>/dev/null
rm -rf $O/suite $O/rs $O/demo
